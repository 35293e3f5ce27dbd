from calc.stats import mean

print(mean([1, None, 3]))

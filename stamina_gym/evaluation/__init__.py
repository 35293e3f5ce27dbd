"""Fair evaluation: independent runs, budgets enforced from outside, audit records,
resume after a crash, a failure taxonomy, summary statistics and an HTML report.

``stamina-gym eval --agent oracle --agent null --env StaminaTodo-v2 --runs 3``
(see ``stamina_gym.evaluation.command``); the pieces: ``config`` (frozen rules and their
hash), ``runner`` (the runs), ``summary``, ``report``.
"""

from importer.csv_import import import_contacts

result = import_contacts("")
print("contacts:", result.contacts, "errors:", result.errors)

from importer.csv_import import import_contacts


def test_empty_file_imports_nothing():
    result = import_contacts("")
    assert result.contacts == [] and result.errors == []


def test_blank_lines_only_import_nothing():
    result = import_contacts("\n\n")
    assert result.contacts == [] and result.errors == []

from importer.csv_import import import_contacts


def test_good_rows_are_imported():
    result = import_contacts("name,email,phone\nAnn,ann@example.com,555\nBob,bob@example.com,\n")
    assert result.contacts == [
        {"name": "Ann", "email": "ann@example.com", "phone": "555"},
        {"name": "Bob", "email": "bob@example.com", "phone": ""},
    ]
    assert result.errors == []


def test_bad_rows_are_skipped_and_reported_by_line():
    text = "name,email\nAnn,ann@example.com\n,nobody@example.com\nCid,not-an-email\nDee,dee@example.com\n"
    result = import_contacts(text)
    assert [c["name"] for c in result.contacts] == ["Ann", "Dee"]
    assert [line for line, _ in result.errors] == [3, 4]
    assert all(isinstance(reason, str) and reason for _, reason in result.errors)


def test_duplicate_email_keeps_the_first():
    text = "name,email\nAnn,ann@example.com\nAnnie,ANN@example.com\n"
    result = import_contacts(text)
    assert [c["name"] for c in result.contacts] == ["Ann"]
    assert [line for line, _ in result.errors] == [3]


def test_quoted_fields_with_commas():
    result = import_contacts('name,email\n"Smith, Jane",jane@example.com\n')
    assert result.contacts[0]["name"] == "Smith, Jane"


def test_values_are_trimmed_and_extra_columns_ignored():
    result = import_contacts("name,email,city\n  Ann  , ann@example.com ,Paris\n")
    assert result.contacts == [{"name": "Ann", "email": "ann@example.com", "phone": ""}]

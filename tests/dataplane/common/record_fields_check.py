"""The writers' records against the field table (dataplane/common/record_fields.cpp), as
`record_fields_print json` prints it. Imported by the tests that run the real writers
(tests/integration/record_fields_test.py, tests/hosttrace/trace_test.py).

    table = load_table(PRINTER)
    check = FieldCheck(table, "insert-dp")
    for record in records: check.record(record, where)   # unknown, missing, wrong types
    check.errors                  # each problem once, where first seen, how often
    check.unseen()                # fields of the table no record had, and not conditional

A record's fields are its paths: `a.b` (field b of object a), `a[].b` (of the objects in
array a); a table path `a.*` stands for any key of a. A row with `when` "kind=x|y" applies
to the records whose `kind` is x or y.
"""
import json
import subprocess

# The JSON type(s) of each table type (bool is not an int here).
TYPES = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array of strings": lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
    "array of integers": lambda v: isinstance(v, list) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in v),
    "array of objects": lambda v: isinstance(v, list) and all(isinstance(i, dict) for i in v),
}
MAX_ERRORS = 50


def load_table(printer):
    out = subprocess.run([printer, "json"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return [json.loads(line) for line in out.splitlines()]


def paths(record, prefix=""):
    """(path, value) of every field, nested ones included."""
    for key, value in record.items():
        path = prefix + key
        yield path, value
        if isinstance(value, dict):
            yield from paths(value, path + ".")
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield from paths(item, path + "[].")


def matches(pattern, path):
    want, got = pattern.split("."), path.split(".")
    return len(want) == len(got) and all(w in ("*", g) for w, g in zip(want, got))


def applies(row, record):
    if not row["when"]:
        return True
    key, values = row["when"].split("=", 1)
    return record.get(key) in values.split("|")


class FieldCheck:
    def __init__(self, table, producer):
        self.producer = producer
        self.rows = {}
        for row in table:
            if row["producer"] == producer:
                self.rows.setdefault(row["record"], []).append(row)
        if not self.rows:
            raise ValueError(f"the table has no records of {producer}")
        self.seen = set()  # (record, when, path) of the rows some record had
        self.problems = {}  # what was wrong -> [where first, how many records]
        self.records = 0

    def error(self, where, text):
        first = self.problems.setdefault(text, [where, 0])
        first[1] += 1

    @property
    def errors(self):
        """Each problem once, with where it was first seen and how often (the first 50)."""
        return [f"{text} ({where}" + (f", and {n - 1} more records)" if n > 1 else ")")
                for text, (where, n) in list(self.problems.items())[:MAX_ERRORS]]

    def record(self, record, where, complete=True):
        """Checks one record of this producer: every field is in the table, of its type, and
        (`complete`) every field the table says it always has is there - where its parent
        object is (an empty array or map has no fields to miss)."""
        self.records += 1
        rtype = record.get("type")
        rows = self.rows.get(rtype)
        if rows is None:
            self.error(where, f"{self.producer} record type {rtype!r} is not in the table")
            return
        rows = [r for r in rows if applies(r, record)]
        fields = list(paths(record))
        if complete:
            have = [path for path, _ in fields]
            # Where fields are: "" (the record), `a` (object a), `a[]` (a's items).
            holders = {""} | {h.rsplit(".", 1)[0] for h in have if "." in h}
            for r in rows:
                holder = r["path"].rsplit(".", 1)[0] if "." in r["path"] else ""
                if r["conditional"] or not any(matches(holder, h) for h in holders):
                    continue
                if not any(matches(r["path"], h) for h in have):
                    self.error(where, f"{self.producer} {rtype} has no {r['path']!r}")
        for path, value in fields:
            row = next((r for r in rows if matches(r["path"], path)), None)
            if row is None:
                self.error(where, f"{self.producer} {rtype} field {path!r} is not in the table")
                continue
            self.seen.add((rtype, row["when"], row["path"]))
            if value is None:
                if not row["nullable"]:
                    self.error(where, f"{self.producer} {rtype} {path} is null; the table says "
                               "it never is")
            elif not TYPES[row["type"]](value):
                self.error(f"{where}: {json.dumps(value)[:60]}",
                           f"{self.producer} {rtype} {path} is not a {row['type']}")

    def unseen(self):
        """Rows no checked record had that the table does not mark conditional."""
        return [f"{self.producer} {r['record']} {r['path']}" + (f" ({r['when']})" if r["when"] else "")
                for rows in self.rows.values() for r in rows
                if not r["conditional"] and (r["record"], r["when"], r["path"]) not in self.seen]

function transform(row) {
  return { mrn: row.mrn, test: row.test, value: row.value };
}

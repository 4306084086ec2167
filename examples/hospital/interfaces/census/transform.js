function transform(run, meta) {
  return { run: meta.id, due: run.due, previous: run.previous || "" };
}

function transform(run) {
  return "due\n" + run.due + "\n";
}

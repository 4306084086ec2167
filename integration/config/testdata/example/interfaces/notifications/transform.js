function transform(msg) {
  return msg;
}

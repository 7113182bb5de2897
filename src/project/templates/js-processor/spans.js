
// Spans (`ReadableSpan`s), by name.
export const spanProcessor = processSpans((settings) => {
  const rules = new Rules(settings);
  return {
    process(spans, edits) {
      spans.forEach((s, i) => rules.apply(edits, i, s.name, Object.keys(s.attributes)));
    },
  };
});

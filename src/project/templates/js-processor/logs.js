
// Log records (`ReadableLogRecord`s), by event name.
export const logProcessor = processLogs((settings) => {
  const rules = new Rules(settings);
  return {
    process(records, edits) {
      records.forEach((r, i) => rules.apply(edits, i, r.eventName, Object.keys(r.attributes)));
    },
  };
});

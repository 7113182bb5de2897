
/** One line per log record on stdout (setting `prefix`, default `log`). */
class LogLines {
  constructor(settings) {
    this.prefix = settings.prefix ?? "log";
  }

  export(records, resultCallback) {
    for (const r of records) {
      const body = typeof r.body === "string" ? r.body : String(r.body);
      console.log(`${this.prefix} ${r.severityText ?? "-"} ${body}`);
    }
    resultCallback({ code: ExportResultCode.SUCCESS });
  }

  forceFlush() {}

  shutdown() {}
}

export const logExporter = exportLogs((settings) => new LogLines(settings));


const names = (s, fallback = "") =>
  (s ?? fallback)
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0);

class Rules {
  constructor(settings) {
    this.drop = new Set(names(settings.drop));
    this.keys = names(settings.keys, "user.email");
  }

  // The edits of item `i`, called `name`, whose attributes have `keys`.
  apply(edits, i, name, keys) {
    if (this.drop.has(name)) {
      edits.drop(i);
      return;
    }
    const found = this.keys.filter((k) => keys.includes(k));
    for (const key of found) edits.removeAttribute(i, key);
    if (found.length > 0) edits.setAttribute(i, "lens.redacted", true);
  }
}

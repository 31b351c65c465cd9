/**
 * JSON as the service's Python reads and writes it, for `render()`.
 *
 * A fact value is rendered with Python's `json.dumps(value, ensure_ascii=False,
 * separators=(", ", ": "), sort_keys=True)`, and Python keeps what `JSON.parse` loses: `1.0` is
 * a float (written `1.0`), `1` an int, `12345678901234567890` an exact int, and floats are
 * written in Python's repr (`1e+16`, `1e-05`). So the client parses answers with
 * {@link parseJson}, which builds the same values as `JSON.parse` and also keeps, on every
 * object that has a `value` member, that member's JSON text (under {@link RAW_VALUE}, not
 * enumerable); {@link pythonDumps} re-reads it with numbers as written.
 */

/** Symbol under which {@link parseJson} keeps the JSON text of an object's `value` member. */
export const RAW_VALUE: unique symbol = Symbol("haki.rawValue");

/** A number as written in JSON, read the way Python reads it. */
class PyNumber {
  constructor(readonly lexeme: string) {}
}

type PyValue = null | boolean | string | PyNumber | PyValue[] | Map<string, PyValue>;

class Parser {
  private at = 0;

  constructor(private readonly text: string, private readonly lexemes: boolean) {}

  parse(): unknown {
    const value = this.value();
    this.space();
    if (this.at !== this.text.length) this.fail("unexpected text after the JSON value");
    return value;
  }

  private fail(message: string): never {
    throw new SyntaxError(`${message} at position ${this.at}`);
  }

  private space(): void {
    while (this.at < this.text.length) {
      const c = this.text.charCodeAt(this.at);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      this.at += 1;
    }
  }

  private value(): unknown {
    this.space();
    const c = this.text[this.at];
    if (c === "{") return this.object();
    if (c === "[") return this.array();
    if (c === '"') return this.string();
    if (c === "t") return this.word("true", true);
    if (c === "f") return this.word("false", false);
    if (c === "n") return this.word("null", null);
    return this.number();
  }

  private word<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.at)) this.fail("invalid JSON");
    this.at += word.length;
    return value;
  }

  private number(): number | PyNumber {
    const match = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(this.text.slice(this.at));
    if (!match) this.fail("invalid JSON");
    this.at += match[0].length;
    return this.lexemes ? new PyNumber(match[0]) : Number(match[0]);
  }

  private string(): string {
    // The string's JSON text, decoded by JSON.parse itself (escapes, surrogates).
    const start = this.at;
    this.at += 1;
    for (;;) {
      const c = this.text[this.at];
      if (c === undefined) this.fail("unterminated string");
      if (c === '"') break;
      this.at += c === "\\" ? 2 : 1;
    }
    this.at += 1;
    return JSON.parse(this.text.slice(start, this.at)) as string;
  }

  private array(): unknown[] {
    this.at += 1;
    const items: unknown[] = [];
    this.space();
    if (this.text[this.at] === "]") {
      this.at += 1;
      return items;
    }
    for (;;) {
      items.push(this.value());
      this.space();
      const c = this.text[this.at++];
      if (c === "]") return items;
      if (c !== ",") this.fail("expected , or ]");
    }
  }

  private object(): Record<string, unknown> | Map<string, unknown> {
    this.at += 1;
    const members = new Map<string, unknown>();
    let raw: string | undefined;
    this.space();
    if (this.text[this.at] === "}") {
      this.at += 1;
    } else {
      for (;;) {
        this.space();
        if (this.text[this.at] !== '"') this.fail("expected a member name");
        const key = this.string();
        this.space();
        if (this.text[this.at++] !== ":") this.fail("expected :");
        this.space();
        const start = this.at;
        members.set(key, this.value());
        if (key === "value") raw = this.text.slice(start, this.at);
        this.space();
        const c = this.text[this.at++];
        if (c === "}") break;
        if (c !== ",") this.fail("expected , or }");
      }
    }
    if (this.lexemes) return members;
    const object: Record<string, unknown> = {};
    for (const [key, value] of members) {
      // As JSON.parse: "__proto__" is an own property, not the prototype.
      Object.defineProperty(object, key, {
        value, enumerable: true, writable: true, configurable: true,
      });
    }
    if (raw !== undefined) Object.defineProperty(object, RAW_VALUE, { value: raw });
    return object;
  }
}

/** `JSON.parse`, plus the raw text of `value` members (see {@link RAW_VALUE}). */
export function parseJson(text: string): unknown {
  return new Parser(text, false).parse();
}

/** Python's `repr(float(lexeme))`, as `json.dumps` writes a float. */
export function pythonFloat(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  // toExponential() without digits gives the shortest round-trip digits, as Python's repr.
  const [mantissa = "", exponent = "0"] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exp = Number(exponent);
  if (exp >= -4 && exp < 16) { // Python: repr switches to an exponent outside 1e-4 ≤ |x| < 1e16
    const point = exp + 1;
    if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
    if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}.0`;
    return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
  }
  const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const magnitude = String(Math.abs(exp)).padStart(2, "0");
  return `${sign}${head}e${exp < 0 ? "-" : "+"}${magnitude}`;
}

function pythonNumber(lexeme: string): string {
  if (/^-?\d+$/.test(lexeme)) return lexeme === "-0" ? "0" : lexeme; // an int, exact
  return pythonFloat(Number(lexeme));
}

/** Code-point order (Python's str order), not UTF-16 code-unit order. */
function byCodePoint(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0) ?? 0);
  const y = Array.from(b, (c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
  }
  return x.length - y.length;
}

function dumps(value: PyValue): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof PyNumber) return pythonNumber(value.lexeme);
  if (Array.isArray(value)) return `[${value.map(dumps).join(", ")}]`;
  const keys = [...value.keys()].sort(byCodePoint);
  return `{${keys.map((k) => `${JSON.stringify(k)}: ${dumps(value.get(k) ?? null)}`).join(", ")}}`;
}

/** A JavaScript value as Python would hold it (an integral number is an int). */
function fromJs(value: unknown): PyValue {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") {
    return new PyNumber(Number.isSafeInteger(value) ? String(value) : pythonFloat(value));
  }
  if (typeof value === "bigint") return new PyNumber(value.toString());
  if (Array.isArray(value)) return value.map(fromJs);
  return new Map(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, fromJs(v)]));
}

/**
 * Python's `json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)`.
 * With `raw` (the value's JSON text, as the service sent it) numbers are written exactly as
 * the service's Python does; without it an integral number counts as an int.
 */
export function pythonDumps(value: unknown, raw?: string): string {
  if (raw !== undefined) return dumps(new Parser(raw, true).parse() as PyValue);
  return dumps(fromJs(value));
}

/**
 * The prompt-ready `<haki_memory>` block, exactly as the service renders it
 * (`haki_local.render.render_packet`); a test renders hostile packets with both.
 *
 * Memory is tenant data, and some of it was written by whoever talked to the agent: it must
 * not be able to close the block, open a forged one, or add lines that look like the block's
 * own. Every memory text is put on one line (line breaks of any kind become spaces, other
 * control characters are dropped) and its angle brackets become the look-alikes ‹ ›.
 */

import { pythonDumps, RAW_VALUE } from "./json.js";
import type { ContextPacket, ContextResult, PacketFact } from "./types.js";

/** Line breaks of every kind (\n, \r, VT, FF, NEL, LS, PS) and the other control characters. */
const BREAKS = /[\n\r\x0b\x0c\x85\u2028\u2029]+/gu;
const CONTROLS = /[\x00-\x08\x0e-\x1f\x7f]/gu;

/** Memory text made safe inside the block: one line, no tag characters. */
export function inline(text: string): string {
  return text.replace(BREAKS, " ").replace(CONTROLS, "").replace(/</g, "‹").replace(/>/g, "›");
}

/** A fact value as text: strings as they are, anything else as Python's compact JSON. */
export function valueText(fact: Pick<PacketFact, "value">): string {
  const value: unknown = fact.value;
  if (typeof value === "string") return value;
  return pythonDumps(value, (fact as { [RAW_VALUE]?: string })[RAW_VALUE]);
}

export function factText(fact: Pick<PacketFact, "predicate" | "value">): string {
  return `${fact.predicate.replaceAll("_", " ")}: ${valueText(fact)}`;
}

/** Python's `f"{x:.2f}"`: like toFixed(2), but an exact tie rounds half to even. */
export function fixed2(x: number): string {
  if (Object.is(x, -0)) return "-0.00";
  const eighths = x * 8;
  if (!(Number.isInteger(eighths) && eighths % 2 !== 0)) return x.toFixed(2);
  // x = m/8 with m odd: x × 100 ends in exactly .5 (toFixed would round it away from zero).
  const hundredths = Math.abs(x) * 100;
  const low = Math.floor(hundredths);
  const even = low % 2 === 0 ? low : low + 1;
  const sign = x < 0 ? "-" : "";
  return `${sign}${Math.floor(even / 100)}.${String(even % 100).padStart(2, "0")}`;
}

const ISO = /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?([Zz]|[+-]\d{2}:?\d{2})?$/;

/** `datetime.isoformat()` of the datetime Python parses from an RFC 3339 string. */
export function pythonIsoformat(text: string): string {
  const match = ISO.exec(text);
  if (!match) return text;
  const [, day, hh = "00", mm = "00", ss = "00", fraction = "", zone] = match;
  const micro = fraction.slice(0, 6).padEnd(6, "0");
  let out = `${day}T${hh}:${mm}:${ss}${/^0+$/.test(micro) ? "" : `.${micro}`}`;
  if (zone !== undefined) {
    const offset = zone.toUpperCase() === "Z" ? "+00:00" : zone.replace(/^([+-]\d{2}):?(\d{2})$/, "$1:$2");
    out += offset === "-00:00" ? "+00:00" : offset;
  }
  return out;
}

/** `<haki_memory>…</haki_memory>`, ready to put before the LLM call; an empty packet
 * (including the fail-open one) renders as an empty string. */
export function render(packet: ContextPacket | ContextResult): string {
  const p: ContextPacket = "packet" in packet ? packet.packet : packet;
  if (p.facts.length === 0 && p.episodes.length === 0) return "";
  const lines = ["<haki_memory>"];
  if (p.facts.length > 0) {
    lines.push("Facts:");
    for (const fact of p.facts) {
      const notes: string[] = [];
      if (fact.valid_from != null) notes.push(`since ${pythonIsoformat(fact.valid_from).slice(0, 10)}`);
      if (fact.confidence != null) notes.push(`confidence ${fixed2(fact.confidence)}`);
      if (fact.unconfirmed) notes.push("unconfirmed");
      const suffix = notes.length > 0 ? ` (${notes.join(", ")})` : "";
      lines.push(`- ${inline(factText(fact))}${suffix}`);
    }
  }
  if (p.episodes.length > 0) {
    lines.push("Episodes:");
    for (const episode of p.episodes) {
      lines.push(`- [${pythonIsoformat(episode.occurred_at)}] ${inline(episode.excerpt)}`);
    }
  }
  lines.push("</haki_memory>");
  return lines.join("\n");
}

/**
 * Handles: the short names the `<haki_memory>` block gives its lines, so that a model can cite
 * what it used (`[f2]`, `[e5]`) and the agent can report it as feedback.
 *
 * The rule, the service's: the i-th fact of `packet.facts` is `f{i}`, the j-th episode of
 * `packet.episodes` is `e{j}`, both 1-based in packet order. A handle names an item of one
 * packet only: map it with the packet it came from.
 */

import type { ContextPacket } from "./types.js";

const HANDLE = /^\[?([fe])([1-9][0-9]*)\]?$/;
const CITED = /\[([fe])([1-9][0-9]*)\]/g;
const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Every handle of `packet` and the fact or event id it names, in packet order. */
export function handles(packet: ContextPacket): Map<string, string> {
  const named = new Map<string, string>();
  packet.facts.forEach((fact, i) => named.set(`f${i + 1}`, fact.id));
  packet.episodes.forEach((episode, j) => named.set(`e${j + 1}`, episode.event_id));
  return named;
}

/** The ids of the items `text` (a model's answer) cites as `[f2]` / `[e5]`, each once, in the
 * order first cited. A handle the packet does not have is ignored (a made-up citation names
 * nothing). */
export function citedIds(text: string, packet: ContextPacket): string[] {
  const named = handles(packet);
  const ids: string[] = [];
  for (const [, kind, number] of text.matchAll(CITED)) {
    const id = named.get(`${kind}${number}`);
    if (id !== undefined && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** Handles (`f2`, `[e5]`) and ids, as ids, each once, in order; throws a `RangeError` naming
 * each one that is neither a handle of `packet` nor an id. */
export function resolveRefs(refs: readonly string[], packet?: ContextPacket): string[] {
  const named = packet ? handles(packet) : new Map<string, string>();
  const ids: string[] = [];
  const unknown: string[] = [];
  for (const ref of refs) {
    const handle = HANDLE.exec(ref.trim());
    const id = handle ? named.get(`${handle[1]}${handle[2]}`)
      : UUID_TEXT.test(ref.trim()) ? ref.trim().toLowerCase() : undefined;
    if (id === undefined) unknown.push(ref);
    else if (!ids.includes(id)) ids.push(id);
  }
  if (unknown.length) {
    throw new RangeError(`not a handle of this packet nor an id: ${unknown.join(", ")}`);
  }
  return ids;
}

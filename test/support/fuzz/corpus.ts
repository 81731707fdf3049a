/**
 * Hostile strings every fuzzed text field, path parameter and GraphQL text argument receives, in
 * every run: the names a plain object inherits (so that a lookup by a client's string that finds
 * `Object.prototype` shows up as a failure on every run, not on one seed in many), and the
 * strings that break careless text handling.
 */

/** Every member name of `Object.prototype` (`__proto__`, `constructor`, `valueOf`, ...), and dotted paths into it. */
export const PROTOTYPE_NAMES: readonly string[] = [...Object.getOwnPropertyNames(Object.prototype), 'constructor.prototype'];

/** Strings at the edges of text handling: lengths, lone surrogates, NUL and other control characters. */
const EDGE_STRINGS: ReadonlyArray<{ label: string; value: string }> = [
  { label: 'a very long string (100k)', value: 'A'.repeat(100_000) },
  { label: 'a lone high surrogate', value: 'a\uD800b' },
  { label: 'a lone low surrogate', value: '\uDC00' },
  { label: 'a reversed surrogate pair', value: '\uDC00\uD800' },
  { label: 'NUL', value: '\u0000' },
  { label: 'NUL inside text', value: 'demo\u0000user' },
];

/** True when the string can be percent-encoded into a URL (a lone surrogate cannot). */
export function encodable(text: string): boolean {
  try {
    encodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** The corpus as labelled cases. */
export const HOSTILE_STRINGS: ReadonlyArray<{ label: string; value: string }> = [
  ...PROTOTYPE_NAMES.map((name) => ({ label: `the inherited name ${name}`, value: name })),
  ...EDGE_STRINGS,
];

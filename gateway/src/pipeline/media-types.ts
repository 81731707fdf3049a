import type { HeaderMap } from '@apollo/server';
import { badRequest } from './errors.js';

/** The media types a single GraphQL answer may be sent as, in the order a tie in `Accept` goes. */
const ANSWER_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
] as const;

/** The answer type when a request sends no `Accept`. */
export const DEFAULT_ANSWER_TYPE = ANSWER_TYPES[0];

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HTTP_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/**
 * `read`, its answers kept by argument: clients send few distinct headers. Once `max` are kept the
 * lot starts over, so headers sent to fill it cost a read each, no more memory.
 */
function keptBy<T>(read: (header: string) => T, max = 256): (header: string) => T {
  const kept = new Map<string, T>();
  return (header) => {
    if (kept.has(header)) return kept.get(header)!;
    const value = read(header);
    if (kept.size >= max) kept.clear();
    kept.set(header, value);
    return value;
  };
}

/** A media type's essence (`type/subtype`, lower-case) as the WHATWG MIME parser reads it; null when it is not a media type. */
export const essenceOf = keptBy(readEssence);

function readEssence(mediaType: string): string | null {
  const text = mediaType.replace(HTTP_WHITESPACE, '');
  const slash = text.indexOf('/');
  if (slash <= 0) return null;
  const type = text.slice(0, slash);
  const semicolon = text.indexOf(';', slash);
  const subtype = (semicolon < 0 ? text.slice(slash + 1) : text.slice(slash + 1, semicolon)).replace(/[\t\n\r ]+$/, '');
  if (!TOKEN.test(type) || !TOKEN.test(subtype)) return null;
  return `${type}/${subtype}`.toLowerCase();
}

/** The content types a browser may send without a preflight (CORS "simple" requests). */
const NON_PREFLIGHTED_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);
/** Headers a browser sends only after a preflight, either of which lets a simple request through. */
const CSRF_PREVENTION_HEADERS = ['x-apollo-operation-name', 'apollo-require-preflight'];

/**
 * Refuses (400) a request a browser could send cross-site without a preflight: no content type, or
 * one of the simple ones, and none of the headers that need one. A content type that does not parse
 * is let through, as a browser would preflight it.
 */
export function preventCsrf(headers: HeaderMap): void {
  const contentType = headers.get('content-type');
  if (contentType !== undefined) {
    const essence = essenceOf(contentType);
    if (essence === null || !NON_PREFLIGHTED_TYPES.has(essence)) return;
  }
  if (CSRF_PREVENTION_HEADERS.some((name) => (headers.get(name) ?? '').length > 0)) return;
  throw badRequest(
    "This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Please either specify a 'content-type' header " +
      `(with a type that is not one of ${[...NON_PREFLIGHTED_TYPES].join(', ')}) or provide a non-empty value for one of the ` +
      `following headers: ${CSRF_PREVENTION_HEADERS.join(', ')}\n`,
  );
}

interface MediaRange {
  type: string;
  subtype: string;
  params: ReadonlyMap<string, string>;
  q: number;
  index: number;
}

const SEMICOLON = 0x3b;
const COMMA = 0x2c;
const EQUALS = 0x3d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The index past optional whitespace (spaces and tabs) from `index`. */
function skipWhitespace(text: string, index: number): number {
  while (index < text.length && (text.charCodeAt(index) === 0x20 || text.charCodeAt(index) === 0x09)) index += 1;
  return index;
}

/** The end of `text.slice(start, end)` without its trailing whitespace. */
function trimmedEnd(text: string, start: number, end: number): number {
  while (end > start && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end -= 1;
  return end;
}

/** The index of the next `;` or `,` from `index` (the text's length when there is none). */
function valueEnd(text: string, index: number): number {
  while (index < text.length && text.charCodeAt(index) !== SEMICOLON && text.charCodeAt(index) !== COMMA) index += 1;
  return index;
}

/**
 * The media ranges of an `Accept` header, in order, with their weights, read as `negotiator` reads
 * them: parameters quoted or not (a quoted one may hold `,` and `;`, and `\` escapes), names in
 * lower case, the first of a repeated parameter kept, a missing or empty weight as 1. A range
 * without `/` is left out but keeps its place in the order.
 */
function mediaRangesOf(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  let index = 0;
  for (let position = 0; index < accept.length; position += 1) {
    index = skipWhitespace(accept, index);
    const start = index;
    index = valueEnd(accept, index);
    const range = accept.slice(start, trimmedEnd(accept, start, index)).toLowerCase();
    const params = new Map<string, string>();
    parameter: while (index < accept.length && accept.charCodeAt(index) !== COMMA) {
      index = skipWhitespace(accept, index + 1);
      const nameStart = index;
      while (index < accept.length) {
        const code = accept.charCodeAt(index);
        if (code === COMMA) break parameter;
        if (code === SEMICOLON) continue parameter;
        if (code !== EQUALS) {
          index += 1;
          continue;
        }
        const name = accept.slice(nameStart, trimmedEnd(accept, nameStart, index)).toLowerCase();
        index = skipWhitespace(accept, index + 1);
        if (accept.charCodeAt(index) === QUOTE) {
          let value = '';
          index += 1;
          while (index < accept.length) {
            const char = accept.charCodeAt(index++);
            if (char === QUOTE) {
              // A quoted value counts only once its quote is closed.
              index = valueEnd(accept, index);
              if (!params.has(name)) params.set(name, value);
              break;
            }
            value += char === BACKSLASH && index < accept.length ? accept.charAt(index++) : String.fromCharCode(char);
          }
          continue parameter;
        }
        const valueStart = index;
        index = valueEnd(accept, index);
        if (!params.has(name)) params.set(name, accept.slice(valueStart, trimmedEnd(accept, valueStart, index)));
        continue parameter;
      }
    }
    index += 1;
    const slash = range.indexOf('/');
    if (slash < 0) continue;
    const weight = params.get('q');
    params.delete('q');
    ranges.push({
      type: range.slice(0, slash),
      subtype: range.slice(slash + 1),
      params,
      q: weight ? Number.parseFloat(weight) : 1,
      index: position,
    });
  }
  return ranges;
}

/** How well a range matches an offered type: its weight and specificity, or null when it does not match. */
function matchOf(offer: MediaRange, range: MediaRange): { q: number; s: number; o: number } | null {
  let s = 0;
  if (range.type === offer.type) s |= 4;
  else if (range.type !== '*') return null;
  if (range.subtype === offer.subtype) s |= 2;
  else if (range.subtype !== '*') return null;
  if (range.params.size > 0) {
    for (const [name, value] of range.params) {
      if (value !== '*' && (offer.params.get(name) ?? '').toLowerCase() !== value.toLowerCase()) return null;
    }
    s |= 1;
  }
  return { q: range.q, s, o: range.index };
}

const OFFERS = ANSWER_TYPES.map((type, index) => ({ ...mediaRangesOf(type)[0]!, index }));
/** The answer type an `Accept` header chooses, or null for none. */
function chooseAnswerType(accept: string): string | null {
  const ranges = mediaRangesOf(accept);
  let best: { q: number; s: number; o: number; i: number } | null = null;
  for (const offer of OFFERS) {
    let match: { q: number; s: number; o: number } | null = null;
    for (const range of ranges) {
      const candidate = matchOf(offer, range);
      if (candidate && (!match || (candidate.s - match.s || candidate.q - match.q || candidate.o - match.o) > 0)) match = candidate;
    }
    if (!match || !(match.q > 0)) continue;
    const ranked = { ...match, i: offer.index };
    if (!best || (ranked.q - best.q || ranked.s - best.s || best.o - ranked.o) > 0) best = ranked;
  }
  return best ? ANSWER_TYPES[best.i]! : null;
}

const answerTypeKept = keptBy(chooseAnswerType);

/**
 * The type a single answer is sent as, by the request's `Accept` (as HTTP's proactive negotiation
 * ranks them: weight, then the most specific range, then the header's order, then the offers');
 * null when it accepts none of them (406).
 */
export function answerTypeFor(accept: string | undefined): string | null {
  return accept ? answerTypeKept(accept) : DEFAULT_ANSWER_TYPE;
}

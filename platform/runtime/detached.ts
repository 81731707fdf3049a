/**
 * `text` as a string of its own. A string read out of a larger one (a name out of a GraphQL
 * document, by the parser's `slice`) is, in V8, a view of the whole from 13 characters on: keeping
 * the name keeps the whole text. A name kept past its request (a rate-limit key for its window, a
 * metric's label) is detached first.
 */
export function detached(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

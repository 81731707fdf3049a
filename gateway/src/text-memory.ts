/**
 * Values remembered by a text a client sent (a document, what a request named its operation by),
 * at most `maxEntries` of them and `maxChars` of their texts in all, oldest out. A `Map`, so any
 * text is a key (`__proto__` included); a text longer than `maxChars` is not kept.
 */
export class TextMemory<V> {
  readonly #values = new Map<string, V>();
  #chars = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxChars: number,
  ) {}

  /** The value kept for `text`, if it is still kept. */
  get(text: string): V | undefined {
    return this.#values.get(text);
  }

  /** Keeps `value` for `text` (a text kept already keeps its first value), letting the oldest go past the bounds. */
  set(text: string, value: V): void {
    if (this.#values.has(text) || text.length > this.maxChars) return;
    this.#values.set(text, value);
    this.#chars += text.length;
    for (const oldest of this.#values.keys()) {
      if (this.#values.size <= this.maxEntries && this.#chars <= this.maxChars) break;
      this.#values.delete(oldest);
      this.#chars -= oldest.length;
    }
  }
}

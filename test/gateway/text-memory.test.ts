import { describe, expect, it } from 'vitest';
import { TextMemory } from '../../gateway/src/text-memory.js';

describe('a memory of texts a client sent', () => {
  it('answers what it keeps, any text a key', () => {
    const memory = new TextMemory<number>(10, 1000);
    memory.set('__proto__', 1);
    memory.set('valueOf', 2);
    expect(memory.get('__proto__')).toBe(1);
    expect(memory.get('valueOf')).toBe(2);
    expect(memory.get('constructor')).toBeUndefined();
  });

  it('lets the oldest go past its count of entries', () => {
    const memory = new TextMemory<number>(2, 1000);
    memory.set('a', 1);
    memory.set('b', 2);
    memory.set('c', 3);
    expect([memory.get('a'), memory.get('b'), memory.get('c')]).toEqual([undefined, 2, 3]);
  });

  it('lets the oldest go past its characters in all, and keeps no text longer than them', () => {
    const memory = new TextMemory<number>(10, 10);
    memory.set('aaaa', 1);
    memory.set('bbbb', 2);
    memory.set('cccc', 3);
    expect([memory.get('aaaa'), memory.get('bbbb'), memory.get('cccc')]).toEqual([undefined, 2, 3]);
    memory.set('x'.repeat(11), 4);
    expect(memory.get('x'.repeat(11))).toBeUndefined();
    expect(memory.get('cccc')).toBe(3);
  });

  it('keeps the first value of a text set twice, and counts it once', () => {
    const memory = new TextMemory<number>(10, 8);
    memory.set('abcd', 1);
    memory.set('abcd', 2);
    memory.set('efgh', 3);
    expect([memory.get('abcd'), memory.get('efgh')]).toEqual([1, 3]);
  });
});

// `npx tsx bench/answer-objects.ts`: what building an answer costs, and serializing it, with the
// objects the executor makes (plain, `jsonObject`) against objects without a prototype
// (`emptyData`), which V8 keeps as dictionaries. The answer is a large one: 100 objects of 35
// fields (latest transactions gives up to 30). A best case (one process, nothing else running),
// for the ratio alone.
import { emptyData, jsonObject, own, setOwn, type DataObject } from '../gateway/src/execution/data.js';

const FIELDS = Array.from({ length: 35 }, (_, i) => `field${i}`);
const INPUT: DataObject[] = Array.from({ length: 100 }, (_, j) =>
  Object.fromEntries(FIELDS.map((field, i) => [field, i % 3 === 0 ? j * i : `value ${j}-${i}`])),
);
const ROUNDS = 2000;

/** Copies every field of every input object into a new object, as the result shape does. */
function build(make: () => DataObject): DataObject[] {
  return INPUT.map((input) => {
    const output = make();
    for (const field of FIELDS) if (own(output, field) === undefined) setOwn(output, field, own(input, field));
    return output;
  });
}

const measure = (work: () => unknown): number => {
  for (let i = 0; i < ROUNDS / 10; i += 1) work();
  const started = performance.now();
  for (let i = 0; i < ROUNDS; i += 1) work();
  return ((performance.now() - started) * 1000) / ROUNDS;
};

for (let turn = 0; turn < 2; turn += 1)
  for (const [name, make] of [
    ['without a prototype', emptyData],
    ['plain', jsonObject],
  ] as const) {
    const answer = { data: { latestTransactions: build(make) } };
    console.log(
      `${name.padEnd(20)} build ${measure(() => build(make))
        .toFixed(0)
        .padStart(4)} µs  JSON.stringify ${measure(() => JSON.stringify(answer))
        .toFixed(0)
        .padStart(4)} µs`,
    );
  }

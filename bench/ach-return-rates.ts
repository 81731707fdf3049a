// `npm run bench:ach`: computing a year of daily ACH return-rate reports for an aggregator with
// 100,000 debits, on the embedded FerretDB (or MONGODB_URI). Prints JSON; docs/compliance.md shows a run.
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { generateAchHistory } from '../platform/domain/ach-history.js';
import { addDays } from '../platform/contracts/dates.js';
import { startEmbeddedMongo } from '../platform/mongo/ferretdb.js';
import { createLogger } from '../platform/runtime/logger.js';
import { connectMongo } from '../platform/mongo/mongo.js';
import { computeReports, ReturnRates } from '../subgraphs/compliance/src/return-rates/return-rates.js';
import { returnRateCollections } from '../subgraphs/compliance/src/return-rates/datasource.js';
import { achDays } from '../subgraphs/compliance/src/seed.js';

const AGGREGATOR = 'bench_aggregator';
const END = '2026-10-31';
const RUNS = 5;

const dataDir = process.env.MONGODB_URI ? null : await mkdtemp(path.join(tmpdir(), 'bench-ach-'));
const embedded = dataDir ? await startEmbeddedMongo({ dataDir, ferretdbBin: process.env.FERRETDB_BIN }) : null;
const mongo = await connectMongo(process.env.MONGODB_URI ?? embedded!.uri, `bench_${process.pid}_`);
try {
  // A year of reports needs the 119 days before the first one too: 484 days of ~207 debits = 100,000.
  const days = 484;
  const perDay = Math.ceil(100_000 / days);
  const history = generateAchHistory({
    svcAggregatorId: AGGREGATOR,
    endDate: END,
    days,
    perDay,
    seed: 7,
    spike: { fromDay: 200, toDay: 215, unauthorizedRate: 0.03 },
  });
  const debits = history.filter((a) => a.kind === 'debit').length;
  const dayDocs = achDays(history);
  const db = mongo.db('compliance');
  await returnRateCollections(db).days.insertMany(dayDocs);
  await returnRateCollections(db).days.createIndex({ svcAggregatorId: 1, date: 1 });
  const from = addDays(END, -364);
  const to = addDays(END, 1);
  const returnRates = new ReturnRates(db, createLogger('warn'));

  const endToEnd: number[] = [];
  const computeOnly: number[] = [];
  const lateReturn: number[] = [];
  let reports = 0;
  for (let run = 0; run < RUNS; run += 1) {
    // A year computed from scratch: read the daily totals, compute, store 366 reports.
    await returnRateCollections(db).reports.deleteMany({ svcAggregatorId: AGGREGATOR });
    let started = performance.now();
    reports = await returnRates.compute(AGGREGATOR, from, to);
    endToEnd.push(performance.now() - started);
    const map = new Map(dayDocs.map((d) => [d.date, d]));
    started = performance.now();
    computeReports(AGGREGATOR, map, from, to);
    computeOnly.push(performance.now() - started);
    // A late return in mid-year: apply it and recompute the reports it changes.
    started = performance.now();
    await returnRates.apply([
      {
        eventId: `late_${run}`,
        kind: 'return',
        svcAggregatorId: AGGREGATOR,
        svcTransactionId: `late_${run}`,
        entryDate: addDays(END, -180),
        amount: '99.99',
        returnCode: 'R10',
      },
    ]);
    lateReturn.push(performance.now() - started);
  }
  // Ingestion as the forwarder does it: four batches of 50 new debits, all on one busy day.
  const ingestMs: number[] = [];
  for (let batch = 0; batch < 4; batch += 1) {
    const activities = Array.from({ length: 50 }, (_, i) => ({
      eventId: `busy_${batch}_${i}:debit`,
      kind: 'debit' as const,
      svcAggregatorId: AGGREGATOR,
      svcTransactionId: `busy_${batch}_${i}`,
      entryDate: END,
      amount: '10.00',
      returnCode: null,
    }));
    const started = performance.now();
    await returnRates.apply(activities);
    ingestMs.push(Math.round(performance.now() - started));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(
    JSON.stringify(
      {
        scenario: 'a year of daily ACH return-rate reports for one aggregator',
        debits,
        returns: history.length - debits,
        dailyTotals: dayDocs.length,
        reports,
        runs: RUNS,
        yearFromScratchMs: { median: Math.round(median(endToEnd)), all: endToEnd.map(Math.round) },
        lateReturnMs: { median: Math.round(median(lateReturn)), all: lateReturn.map(Math.round) },
        computeOnlyMs: { median: Math.round(median(computeOnly) * 10) / 10 },
        ingestFourBatchesOf50OnOneDayMs: ingestMs,
        targetMs: 5000,
        database: process.env.MONGODB_URI ? 'MONGODB_URI' : 'embedded FerretDB 1.24 (SQLite)',
        machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      },
      null,
      2,
    ),
  );
} finally {
  for (const name of ['compliance'] as const) await mongo.db(name).dropDatabase();
  await mongo.close();
  await embedded?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}

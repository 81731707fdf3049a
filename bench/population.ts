// The benchmark's users: many end users, each with their own cards, account, transactions,
// beneficiaries, restrictions and a live session, written into each subgraph's own database
// the way its seed writes the demo user's. The demo user's records are the template; each
// user's counts are drawn from a fixed seed, so every run serves the same population.
import { randomBytes } from 'node:crypto';
import type { Document } from 'mongodb';
import { seededRandom } from '../platform/domain/ach-history.js';
import { DEMO } from '../platform/domain/demo.js';
import type { Mongo } from '../platform/mongo/mongo.js';
import { sha256 } from '../platform/security/secrets.js';
import { accountMonth } from '../subgraphs/payments/src/accounts/transactions-datasource.js';

/** One seeded user, with the ids the workload's operations take and the token of their session. */
export interface BenchUser {
  SvcUserId: string;
  sessionId: string;
  token: string;
  SvcAccountId: string;
  SvcCardIds: string[];
  SvcBeneficiaryIds: string[];
  transactions: number;
}

/** How the population's records are spread over its users. */
export interface PopulationShape {
  users: number;
  transactions: { min: number; max: number };
  cards: { min: number; max: number };
  beneficiaries: { min: number; max: number };
  /** The generator's seed. (Restrictions are drawn from none up to the demo user's own.) */
  seed: number;
}

/** The population the suite measures. Transaction counts are log-uniform: most users have a few dozen, some hundreds. */
export const POPULATION: PopulationShape = {
  users: 1000,
  transactions: { min: 3, max: 400 },
  cards: { min: 1, max: 3 },
  beneficiaries: { min: 1, max: 6 },
  seed: 20261126,
};

type Stored = Document & { _id: string };
const DAY = 24 * 3600 * 1000;

/** Writes `shape.users` users (on top of the demo data) and returns them. Run once, on fresh databases. */
export async function seedPopulation(mongo: Mongo, shape: PopulationShape = POPULATION): Promise<BenchUser[]> {
  const random = seededRandom(shape.seed);
  const between = (range: { min: number; max: number }) => range.min + Math.floor(random() * (range.max - range.min + 1));
  const logUniform = (range: { min: number; max: number }) =>
    Math.round(Math.exp(Math.log(range.min) + random() * (Math.log(range.max) - Math.log(range.min))));
  const user = mongo.db('user');
  const cards = mongo.db('cards');
  const payments = mongo.db('payments');
  const compliance = mongo.db('compliance');
  const template = {
    user: (await user.collection<Stored>('users').findOne({ _id: DEMO.userId }))!,
    cards: await cards.collection<Stored>('cards').find({ SvcUserId: DEMO.userId }).sort({ _id: 1 }).toArray(),
    account: (await payments.collection<Stored>('accounts').findOne({ _id: DEMO.accountId }))!,
    transactions: await payments.collection<Stored>('transactions').find({ SvcAccountId: DEMO.accountId }).sort({ dtsValue: -1 }).toArray(),
    beneficiaries: await payments.collection<Stored>('beneficiaries').find({ SvcUserId: DEMO.userId }).sort({ _id: 1 }).toArray(),
    restrictions: await compliance.collection<Stored>('restrictions').find({ SvcUserId: DEMO.userId }).sort({ _id: 1 }).toArray(),
  };
  const now = Date.now();
  const population: BenchUser[] = [];
  const batch = {
    users: [] as Stored[],
    sessions: [] as Stored[],
    cards: [] as Stored[],
    accounts: [] as Stored[],
    transactions: [] as Stored[],
    beneficiaries: [] as Stored[],
    restrictions: [] as Stored[],
  };
  const flush = async () => {
    const writes: Array<[Document[], ReturnType<typeof user.collection>]> = [
      [batch.users, user.collection('users')],
      [batch.sessions, user.collection('sessions')],
      [batch.cards, cards.collection('cards')],
      [batch.accounts, payments.collection('accounts')],
      [batch.transactions, payments.collection('transactions')],
      [batch.beneficiaries, payments.collection('beneficiaries')],
      [batch.restrictions, compliance.collection('restrictions')],
    ];
    for (const [documents, collection] of writes) if (documents.length) await collection.insertMany(documents, { ordered: false });
    for (const documents of Object.values(batch)) documents.length = 0;
  };
  for (let n = 1; n <= shape.users; n += 1) {
    const SvcUserId = `bench_user_${n}`;
    const SvcAccountId = `bench_account_${n}`;
    const token = randomBytes(32).toString('base64url');
    batch.users.push({
      ...template.user,
      _id: SvcUserId,
      SvcUserId,
      email: `bench.user.${n}@example.com`,
      referralCode: `BENCH${n}`,
      mainSvcAccountId: SvcAccountId,
      firstName: `User${n}`,
      sortId: `bench user${n}`,
    });
    batch.sessions.push({
      _id: `bench_session_${n}`,
      tokenHash: sha256(token),
      kind: 'user',
      SvcUserId,
      prospectId: null,
      deviceTag: null,
      svcAggregatorId: null,
      login: null,
      tokenType: null,
      channel: 'internet',
      dtsCreated: new Date(now),
      dtsExpiry: new Date(now + DAY),
      dtsRevoked: null,
    });
    // Minor units, up to 10,000.00, all of it available (card holds take from it as messages are approved).
    const balance = Math.round(random() * 1_000_000);
    batch.accounts.push({ ...template.account, _id: SvcAccountId, SvcAccountId, SvcUserId, balance, availableBalance: balance });
    const SvcCardIds: string[] = [];
    const cardCount = between(shape.cards);
    for (let c = 0; c < cardCount; c += 1) {
      const SvcCardId = `bench_card_${n}_${c + 1}`;
      SvcCardIds.push(SvcCardId);
      batch.cards.push({
        ...template.cards[c % template.cards.length]!,
        _id: SvcCardId,
        SvcCardId,
        SvcUserId,
        SvcAccountId,
        isMain: c === 0,
      });
    }
    const transactions = logUniform(shape.transactions);
    for (let t = 0; t < transactions; t += 1) {
      const from = template.transactions[t % template.transactions.length]!;
      const transactionId = `bench_txn_${n}_${t + 1}`;
      // Spread over the last 14 months, newest first, as the demo account's are.
      const dtsValue = new Date(now - Math.round((t / Math.max(1, transactions - 1)) * 425 * DAY) - t * 60_000);
      batch.transactions.push({
        ...from,
        _id: transactionId,
        transactionId,
        SvcAccountId,
        SvcUserId,
        SvcCardId: from.SvcCardId === null ? null : SvcCardIds[0],
        dtsValue,
        dtsRecorded: dtsValue,
        dtsBooked: from.dtsBooked === null ? null : dtsValue,
        dtsCompleted: from.dtsCompleted === null ? null : dtsValue,
        accountMonth: accountMonth(SvcAccountId, dtsValue),
      });
    }
    const SvcBeneficiaryIds: string[] = [];
    const beneficiaryCount = between(shape.beneficiaries);
    for (let b = 0; b < beneficiaryCount; b += 1) {
      const SvcBeneficiaryId = `bench_beneficiary_${n}_${b + 1}`;
      SvcBeneficiaryIds.push(SvcBeneficiaryId);
      batch.beneficiaries.push({
        ...template.beneficiaries[b % template.beneficiaries.length]!,
        _id: SvcBeneficiaryId,
        SvcBeneficiaryId,
        SvcUserId,
        defaultSourceAccountId: SvcAccountId,
      });
    }
    // Some users have restrictions of their own; the others get the platform defaults.
    const restrictions = Math.floor(random() * (template.restrictions.length + 1));
    for (let r = 0; r < restrictions; r += 1) {
      const restrictionId = `bench_restriction_${n}_${r + 1}`;
      batch.restrictions.push({ ...template.restrictions[r]!, _id: restrictionId, restrictionId, SvcUserId });
    }
    population.push({ SvcUserId, sessionId: `bench_session_${n}`, token, SvcAccountId, SvcCardIds, SvcBeneficiaryIds, transactions });
    if (batch.transactions.length >= 5000 || n === shape.users) await flush();
  }
  return population;
}

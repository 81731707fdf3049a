import { MongoServerError, type AnyBulkWriteOperation, type Collection, type Db, type Filter, type UpdateFilter } from 'mongodb';
import type { GraphClient } from '../../../../platform/graphql/graph-client.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { minor, minorDigits, negate, sumMinor, toMinor, type MinorUnits } from '../../../../platform/money/money.js';
import { cardMessagesCollection, type CardMessageDocument } from './datasource.js';

/*
 * An account's spending balance, kept where card messages are decided, so that the funds check
 * adds no remote call to a decision. Every change is one conditional update of the account's one
 * document, the amount condition in its filter: of two messages that each fit but not together,
 * the second update matches nothing. What a change did is named in the document itself (string
 * lists, the only array matching and removal FerretDB 1.24 does right), so doing it again changes
 * nothing.
 *
 *   spendable = the available balance payments had when this account was first met
 *             + the overdraft limit
 *             - the amounts authorizations hold              (holdIds, holds)
 *             - what decided purchases took, + what reversals credited back, until payments posts them (unposted)
 *             + what payments posted since (which takes each `unposted` entry out, spendable unchanged)
 *
 * Payments moves an account's balance only by card postings, so nothing else changes it. What a
 * decision interrupted between its funds update and its insert took, `reconcile` gives back.
 */

/** One account's spending balance (collection `spendingAccounts`, `_id` = SvcAccountId). */
export interface SpendingAccountDocument {
  _id: string;
  currency: string;
  /** What a card may still spend, in minor units of `currency`; never below 0 by a card message (the overdraft limit is in it). */
  spendable: MinorUnits;
  /** In minor units: how far below zero the account's balance may go, counted into `spendable` when it was started. */
  overdraftLimit: MinorUnits;
  /** `<messageId>|<amount>` of each approved authorization whose amount is held. */
  holdIds: string[];
  /** `<expiry ISO time>|<messageId>|<amount>` of the same holds: the expiry sweep finds the expired ones by string order. */
  holds: string[];
  /** `<messageId>|<signed amount>` of each decided financial message that moved `spendable` and that payments has not posted yet. */
  unposted: string[];
  dtsStarted: Date;
}

/** An approved authorization whose amount is (or was) held. */
export interface HeldAuthorization {
  messageId: string;
  amount: MinorUnits;
  holdExpires: Date;
}

/** Whether a message's amount is covered: `covered` (taken now, or by an earlier copy), `insufficient`, or `unavailable` (the account's balance could not be read). */
export type FundsOutcome =
  | { kind: 'covered'; holdExpires: Date | null }
  | { kind: 'insufficient'; spendable: MinorUnits }
  | { kind: 'unavailable'; reason: string };

/** The accounts' spending balances, one document per account card authorization has met. */
export function spendingAccountsCollection(db: Db): Collection<SpendingAccountDocument> {
  return db.collection<SpendingAccountDocument>('spendingAccounts');
}

/** The expiry sweep's index: the hold strings, whose order is their expiry's. */
export async function createSpendingIndexes(db: Db): Promise<void> {
  await spendingAccountsCollection(db).createIndex({ holds: 1 });
}

const BALANCE = 'query ($id: ID!) { cardAccountFunds(SvcAccountId: $id) { SvcAccountId currency availableBalance } }';

/** An `unposted` entry: the message and what it moved the spending balance by (negative for what it took). */
export const unpostedEntry = (messageId: string, effect: MinorUnits) => `${messageId}|${effect}`;
const holdId = (hold: Pick<HeldAuthorization, 'messageId' | 'amount'>) => `${hold.messageId}|${hold.amount}`;
const holdExpiry = (hold: HeldAuthorization) => `${hold.holdExpires.toISOString()}|${holdId(hold)}`;

/** An `unposted` entry read back: its messageId (null when it is not one) and effect. */
function splitEntry(entry: string): { messageId: string | null; effect: MinorUnits } {
  const cut = entry.lastIndexOf('|');
  const effect = Number(entry.slice(cut + 1));
  return cut > 0 && Number.isSafeInteger(effect) ? { messageId: entry.slice(0, cut), effect: minor(effect) } : { messageId: null, effect: minor(0) };
}

/** A hold string read back: its expiry, messageId and amount. */
function parseHold(text: string): HeldAuthorization | null {
  const [expires, messageId, amount] = text.split('|');
  const holdExpires = new Date(expires ?? '');
  const units = Number(amount);
  return messageId && Number.isSafeInteger(units) && !Number.isNaN(holdExpires.getTime()) ? { messageId, amount: minor(units), holdExpires } : null;
}

/** Settings of the spending balances (CARD_OVERDRAFT_LIMIT, CARD_HOLD_EXPIRY_SECONDS). */
export interface SpendingOptions {
  /** Whole units of each account's currency. */
  overdraftLimit: number;
  holdExpirySeconds: number;
}

/** The accounts' spending balances: the funds check of card authorization, and what keeps it current. */
export class SpendingBalances {
  private readonly accounts: Collection<SpendingAccountDocument>;
  /** Entries whose message was not stored when `reconcile` last looked, and since when. */
  private readonly suspects = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly graph: GraphClient,
    private readonly options: SpendingOptions,
    private readonly logger: Logger,
  ) {
    this.accounts = spendingAccountsCollection(db);
  }

  /** When a hold placed now expires. */
  holdExpiresAt(now: Date): Date {
    return new Date(now.getTime() + this.options.holdExpirySeconds * 1000);
  }

  /** Takes a purchase's amount (an approved 0200, or a 0220 with no authorization of its own held). */
  async spend(SvcAccountId: string, currency: string, messageId: string, amount: MinorUnits): Promise<FundsOutcome> {
    const entry = unpostedEntry(messageId, negate(amount));
    const { outcome } = await this.take(SvcAccountId, currency, { spendable: { $gte: amount }, unposted: { $ne: entry } }, { $inc: { spendable: negate(amount) }, $push: { unposted: entry } }, (doc) => doc.unposted.includes(entry));
    return outcome;
  }

  /** Holds an authorization's amount (an approved 0100) until it is completed, reversed or expires. */
  async hold(SvcAccountId: string, currency: string, hold: HeldAuthorization): Promise<FundsOutcome> {
    const id = holdId(hold);
    const { outcome, read } = await this.take(
      SvcAccountId, currency,
      { spendable: { $gte: hold.amount }, holdIds: { $ne: id } },
      { $inc: { spendable: negate(hold.amount) }, $push: { holdIds: id, holds: holdExpiry(hold) } },
      (doc) => doc.holdIds.includes(id),
    );
    if (outcome.kind !== 'covered') return outcome;
    // A copy decided before a crash held it: its expiry is the one stored.
    const earlier = read?.holds.map(parseHold).find((held) => held && holdId(held) === id);
    return { kind: 'covered', holdExpires: earlier?.holdExpires ?? hold.holdExpires };
  }

  /**
   * Completes an authorization (a 0220 naming an approved 0100 by originalStan): releases its hold
   * and takes the completion's amount in one update, which fits when the spendable balance with the
   * hold released covers it. When the hold is gone (reversed, expired, completed), a plain purchase.
   */
  async complete(SvcAccountId: string, currency: string, messageId: string, amount: MinorUnits, original: HeldAuthorization): Promise<FundsOutcome> {
    const entry = unpostedEntry(messageId, negate(amount));
    const { outcome, read } = await this.take(
      SvcAccountId, currency,
      { holdIds: holdId(original), holds: holdExpiry(original), spendable: { $gte: minor(amount - original.amount) }, unposted: { $ne: entry } },
      { $inc: { spendable: minor(original.amount - amount) }, $pullAll: { holdIds: [holdId(original)], holds: [holdExpiry(original)] }, $push: { unposted: entry } },
      (doc) => doc.unposted.includes(entry),
    );
    if (outcome.kind === 'insufficient' && read && !read.holdIds.includes(holdId(original))) return this.spend(SvcAccountId, currency, messageId, amount);
    return outcome;
  }

  /** Releases an authorization's hold (a 0420 of an approved 0100, or its expiry); true when this call released it. */
  async release(SvcAccountId: string, original: HeldAuthorization): Promise<boolean> {
    const result = await this.accounts.updateOne(
      { _id: SvcAccountId, holdIds: holdId(original), holds: holdExpiry(original) },
      { $inc: { spendable: original.amount }, $pullAll: { holdIds: [holdId(original)], holds: [holdExpiry(original)] } },
    );
    return result.modifiedCount === 1;
  }

  /**
   * Credits back what a stored reversal gives back (a 0420 of an approved 0200/0220), once. Called
   * after the reversal is stored, as only the stored one of two racing reversals credits.
   */
  async credit(SvcAccountId: string, messageId: string, amount: MinorUnits): Promise<void> {
    const entry = unpostedEntry(messageId, amount);
    await this.accounts.updateOne({ _id: SvcAccountId, unposted: { $ne: entry } }, { $inc: { spendable: amount }, $push: { unposted: entry } });
  }

  /**
   * Gives back what a message took when its copy decided at another replica was stored declined
   * (the two asked the aggregator and got different answers): once, whichever copy asks.
   */
  async giveBack(SvcAccountId: string, messageId: string, amount: MinorUnits, held: Date | null): Promise<void> {
    if (held) {
      await this.release(SvcAccountId, { messageId, amount, holdExpires: held });
      return;
    }
    const entry = unpostedEntry(messageId, negate(amount));
    await this.accounts.updateOne({ _id: SvcAccountId, unposted: entry }, { $inc: { spendable: amount }, $pullAll: { unposted: [entry] } });
  }

  /** Payments has posted these messages' transactions (entries by account): they leave `unposted`, the balance they moved now in payments' own. */
  async posted(entriesByAccount: ReadonlyMap<string, readonly string[]>): Promise<void> {
    if (entriesByAccount.size === 0) return;
    const operations: AnyBulkWriteOperation<SpendingAccountDocument>[] = [...entriesByAccount].map(([SvcAccountId, entries]) => ({
      updateOne: { filter: { _id: SvcAccountId }, update: { $pullAll: { unposted: [...entries] } } },
    }));
    await this.accounts.bulkWrite(operations, { ordered: false });
  }

  /**
   * Gives back what a message took when no approved copy of it was stored: its decision was
   * interrupted between the funds update and the insert (a crash), or its copy stored first was
   * declined and the give-back did not happen. A message not stored at all is first seen by one
   * pass and settled by a pass at least `graceMs` later: an `abandoned` record is inserted under its
   * messageId (so a decision still under way, or a retransmission, loses its insert to it and gives
   * back nothing twice), then what it took is given back. Answers how many this call gave back.
   */
  async reconcile(graceMs: number, now = Date.now()): Promise<number> {
    const open = await this.accounts.find({ $or: [{ unposted: { $gte: '' } }, { holdIds: { $gte: '' } }] }, { projection: { currency: 1, unposted: 1, holdIds: 1, holds: 1 } }).toArray();
    const taken = open.flatMap((account) => [
      ...account.unposted.map((entry) => ({ account, entry, hold: null as HeldAuthorization | null, ...splitEntry(entry) })),
      ...account.holds.flatMap((text) => {
        const hold = parseHold(text);
        return hold ? [{ account, entry: holdId(hold), hold, messageId: hold.messageId, effect: negate(hold.amount) }] : [];
      }),
    ]).filter((item) => item.messageId !== null && item.effect < 0);
    if (taken.length === 0) {
      this.suspects.clear();
      return 0;
    }
    const messages = cardMessagesCollection(this.db);
    const stored = new Map((await messages.find({ _id: { $in: [...new Set(taken.map((item) => item.messageId!))] } }, { projection: { responseCode: 1, amount: 1 } }).toArray()).map((doc) => [doc._id, doc]));
    const seen = new Set<string>();
    let given = 0;
    for (const item of taken) {
      const amount = negate(item.effect);
      const message = stored.get(item.messageId!);
      if (message?.responseCode === '00' && message.amount === amount) continue;
      if (!message) {
        seen.add(item.entry);
        const since = this.suspects.get(item.entry);
        if (since === undefined) this.suspects.set(item.entry, now);
        if (since === undefined || now - since < graceMs || !(await this.abandon(item.messageId!, item.account.currency, amount))) continue;
      }
      const gave = item.hold
        ? await this.release(item.account._id, item.hold)
        : (await this.accounts.updateOne({ _id: item.account._id, unposted: item.entry }, { $inc: { spendable: amount }, $pullAll: { unposted: [item.entry] } })).modifiedCount === 1;
      if (gave) {
        given += 1;
        this.logger.warn('card spending balance given back: its message was not stored approved', { SvcAccountId: item.account._id, messageId: item.messageId });
      }
    }
    for (const entry of [...this.suspects.keys()]) if (!seen.has(entry)) this.suspects.delete(entry);
    return given;
  }

  /** Stores an `abandoned` record under a messageId no decision stored; false when one is stored already. */
  private async abandon(messageId: string, currency: string, amount: MinorUnits): Promise<boolean> {
    const parts = /^msg_(\d{4})_(.+)_(\d{6})_([A-Za-z0-9]{12})$/.exec(messageId);
    if (!parts) return false;
    const [, messageType = '', SvcCardId = '', stan = '', rrn = ''] = parts;
    const now = new Date();
    const reason = 'Its decision was interrupted before it was stored; what it took is given back.';
    const record: CardMessageDocument = {
      _id: messageId, state: 'decided', bindingKey: messageId, reverses: null, messageType, actionType: messageType === '0100' || messageType === '0200' ? 'request' : 'advice',
      SvcCardId, SvcUserId: null, svcAggregatorId: null, amount, currency, stan, rrn, originalStan: null, responseCode: '96', decidedBy: 'funds', reason,
      transactionId: null, decisionMs: 0, dtsReceived: now, advice: null, holdExpires: null,
      // Already carried: nothing follows from a message nobody was answered for.
      type: 'card.authorization', audience: {}, payload: { messageId, messageType, SvcCardId, responseCode: '96', decidedBy: 'funds', transactionId: null, transaction: null }, dtsCreated: now, dtsPublished: now,
    };
    try {
      await cardMessagesCollection(this.db).insertOne(record);
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000) return false;
      throw error;
    }
  }

  /** Releases every hold expired by `now`; answers how many this call released. */
  async expire(now = new Date()): Promise<number> {
    const due = await this.accounts.find({ holds: { $lt: now.toISOString() } }, { projection: { holds: 1 } }).toArray();
    let released = 0;
    for (const account of due) {
      for (const text of account.holds) {
        const hold = parseHold(text);
        if (hold && hold.holdExpires < now && (await this.release(account._id, hold))) released += 1;
      }
    }
    if (released > 0) this.logger.info('card authorization holds expired', { released });
    return released;
  }

  /**
   * One conditional update of the account's document; when it matches nothing, one read (answered
   * as `read`) tells why: no document yet (the account is met for the first time: started, and the
   * update tried again), done already by an earlier copy of the message (`applied`), or not enough
   * to spend.
   */
  private async take(
    SvcAccountId: string, currency: string, filter: Filter<SpendingAccountDocument>, update: UpdateFilter<SpendingAccountDocument>, applied: (doc: SpendingAccountDocument) => boolean,
  ): Promise<{ outcome: FundsOutcome; read: SpendingAccountDocument | null }> {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const result = await this.accounts.updateOne({ _id: SvcAccountId, currency, ...filter }, update);
      if (result.matchedCount === 1) return { outcome: { kind: 'covered', holdExpires: null }, read: null };
      const read = await this.accounts.findOne({ _id: SvcAccountId });
      if (!read) {
        const refused = await this.start(SvcAccountId);
        if (refused) return { outcome: refused, read: null };
        continue;
      }
      if (read.currency !== currency) return { outcome: { kind: 'unavailable', reason: `The account is in ${read.currency}.` }, read };
      return { outcome: applied(read) ? { kind: 'covered', holdExpires: null } : { kind: 'insufficient', spendable: read.spendable }, read };
    }
    throw new Error(`spending balance of ${SvcAccountId} neither started nor found`);
  }

  /**
   * Starts an account's spending balance from payments' available balance and the overdraft limit,
   * less the decided purchases payments has not posted yet; null when started (by this call or
   * another replica's), or why it could not be.
   */
  private async start(SvcAccountId: string): Promise<Extract<FundsOutcome, { kind: 'unavailable' }> | null> {
    // Read before the balance: a purchase posted in between then counts twice (less to spend), never not at all.
    const pending = await cardMessagesCollection(this.db)
      .find({ dtsPublished: null, responseCode: '00', 'payload.transaction.SvcAccountId': SvcAccountId }, { projection: { 'payload.transaction': 1 } })
      .toArray();
    let balance: { SvcAccountId: string; currency: string; availableBalance: string } | null;
    try {
      ({ cardAccountFunds: balance } = await this.graph.request<{ cardAccountFunds: typeof balance }>(BALANCE, { id: SvcAccountId }));
    } catch (error) {
      this.logger.error('account balance could not be read', { SvcAccountId, error: (error as Error).message });
      return { kind: 'unavailable', reason: "The account's balance could not be read." };
    }
    if (!balance) return { kind: 'unavailable', reason: 'The card has no account.' };
    const { currency } = balance;
    // Credits not yet posted are left out: should one be posted in between, it would count twice, as money the account does not have.
    const debits = pending.flatMap(({ _id, payload }) => {
      const transaction = payload.transaction;
      return transaction && transaction.direction === 'debit' && transaction.currency === currency ? [{ messageId: _id, amount: toMinor(transaction.amount, currency, 'amount') }] : [];
    });
    const overdraftLimit = minor(this.options.overdraftLimit * 10 ** minorDigits(currency));
    const spendable = minor(toMinor(balance.availableBalance, currency, 'availableBalance') + overdraftLimit - sumMinor(...debits.map((debit) => debit.amount)));
    try {
      await this.accounts.insertOne({
        _id: SvcAccountId, currency, spendable, overdraftLimit, holdIds: [], holds: [],
        unposted: debits.map((debit) => unpostedEntry(debit.messageId, negate(debit.amount))), dtsStarted: new Date(),
      });
      this.logger.info('spending balance started', { SvcAccountId, pendingDebits: debits.length });
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
    }
    return null;
  }
}

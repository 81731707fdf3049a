import type { AnyBulkWriteOperation, Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkAmount, minor, negate, toMinor, type MinorUnits } from '../../../../platform/money/money.js';
import { checkString } from '../../../../platform/security/validate.js';
import { accountsCollection, type AccountDocument } from './datasource.js';

/*
 * Card holds: what an approved card message takes from its account's available balance before
 * payments posts it (a purchase) or while it waits for its completion (an authorization). Each
 * change is one update of the account's document, whose filter carries the amount condition, so
 * of two messages that each fit but not together the second matches nothing, whichever replica
 * decides them. The holds are lists of strings (`<holdId>|<amount>|<expiry ms>`, a purchase that
 * completed an authorization followed by `|` and that authorization's entry): the embedded
 * database updates lists of strings exactly, not lists of subdocuments (docs/database.md).
 *
 * Invariant: availableBalance = balance - the amounts of every listed hold. A purchase's posting
 * takes its hold out in the same update that moves the balance (card-postings.ts).
 */

/**
 * The most holds of each kind an account may have open; a card message past it declines 65. Open
 * authorizations last days, so 100 is a frequency limit; purchases' last until payments posts them,
 * so theirs only bounds the document while postings fall behind.
 */
export const CARD_HOLDS_PER_ACCOUNT = { authorizationHolds: 100, purchaseHolds: 1000 } as const;

/**
 * How long a purchase's hold lasts if it is never posted (a message parked for an operator, a
 * decision interrupted before its insert): its posting normally takes it out within seconds.
 */
const PURCHASE_HOLD_SECONDS = 30 * 24 * 3600;

/** The most holds one `releaseCardHolds` call may name. */
export const CARD_HOLD_RELEASE_LIMIT = 500;

const HOLD_ID = /^[A-Za-z0-9_.:-]{1,160}$/;

/** The payments side of the funds policy: how far below zero a card may go, and how long a hold lasts. */
export interface CardHoldPolicy {
  /** Whole units of the account's currency (CARD_OVERDRAFT_LIMIT). */
  overdraftLimit: number;
  /** CARD_HOLD_EXPIRY_SECONDS. */
  expirySeconds: number;
}

/** A card message's amount to hold (the schema's CardFundsHoldInput). */
export interface CardHoldRequest {
  /** Unique per deciding attempt: a copy of the message decided elsewhere holds under its own id. */
  holdId: string;
  SvcAccountId: string;
  SvcUserId: string;
  /** Decimal text, in `currency`. */
  amount: string;
  currency: string;
  /** An authorization (0100): held until completed, reversed or expired. Otherwise a purchase, held until posted. */
  authorization: boolean;
  /** On a completion: the holdId of the authorization it completes, whose hold it takes over. */
  completes?: string | null;
  /** An advice (a sale already made): held without the balance condition. */
  force?: boolean | null;
}

/** What holding came to (the schema's CardFundsHoldOutcome). */
export type CardHoldOutcome = 'HELD' | 'INSUFFICIENT_FUNDS' | 'TOO_MANY_HOLDS';

/** A hold to release (the schema's CardHoldReleaseInput). */
export interface CardHoldRelease {
  SvcAccountId: string;
  holdId: string;
}

type HoldList = 'authorizationHolds' | 'purchaseHolds';

/** A listed hold, read back from its entry. */
interface Hold {
  entry: string;
  list: HoldList;
  holdId: string;
  amount: MinorUnits;
  expires: number;
  /** On a purchase that completed an authorization: that authorization's entry. */
  completed: string | null;
}

function parseHold(entry: string, list: HoldList): Hold {
  const [holdId = '', amount = '0', expires = '0', ...completed] = entry.split('|');
  return {
    entry,
    list,
    holdId,
    amount: minor(Number(amount)),
    expires: Number(expires),
    completed: completed.length > 0 ? completed.join('|') : null,
  };
}

function holdsOf(account: Pick<AccountDocument, HoldList>): Hold[] {
  return [
    ...(account.authorizationHolds ?? []).map((entry) => parseHold(entry, 'authorizationHolds')),
    ...(account.purchaseHolds ?? []).map((entry) => parseHold(entry, 'purchaseHolds')),
  ];
}

function findHold(account: Pick<AccountDocument, HoldList>, holdId: string): Hold | undefined {
  return holdsOf(account).find((hold) => hold.holdId === holdId);
}

/** A purchase's hold on the account, by its holdId: the entry a posting takes out, and its amount. */
export function purchaseHold(
  account: Pick<AccountDocument, 'purchaseHolds'>,
  holdId: string,
): { entry: string; amount: MinorUnits } | undefined {
  const hold = findHold({ purchaseHolds: account.purchaseHolds ?? [] }, holdId);
  return hold && { entry: hold.entry, amount: hold.amount };
}

const HOLD_FIELDS = { authorizationHolds: 1, purchaseHolds: 1, holdsSeq: 1 } as const;

/**
 * Holds a card message's amount on its account if the available balance and the overdraft limit
 * cover it: one conditional update (a completion reads the authorization's hold first). A
 * completion whose authorization is still held releases it in the same update, so what it needs is
 * its amount less the authorization's; if the authorization's hold is gone, it is a plain purchase.
 */
export async function holdCardFunds(db: Db, policy: CardHoldPolicy, request: CardHoldRequest, now = Date.now()): Promise<CardHoldOutcome> {
  checkString(request.holdId, 'holdId', { pattern: HOLD_ID, patternText: 'letters, digits and _ . : -, at most 160' });
  if (request.completes != null) checkString(request.completes, 'completes', { pattern: HOLD_ID, patternText: 'a holdId' });
  const amount = checkAmount(request.amount, request.currency, 'amount');
  if (!(amount > 0)) throw appError(ErrorCode.VALIDATION_FAILED, 'amount must be positive.', { field: 'amount' });
  const accounts = accountsCollection(db);
  const overdraft = toMinor(String(policy.overdraftLimit), request.currency, 'overdraftLimit');
  const list: HoldList = request.authorization ? 'authorizationHolds' : 'purchaseHolds';
  const expires = now + (request.authorization ? policy.expirySeconds : PURCHASE_HOLD_SECONDS) * 1000;
  const covered = (needed: number) => (request.force ? {} : { availableBalance: { $gte: minor(needed) } });
  const entry = `${request.holdId}|${amount}|${expires}`;
  const owner = { _id: request.SvcAccountId, SvcUserId: request.SvcUserId, currency: request.currency };
  const room = { [`${list}.${CARD_HOLDS_PER_ACCOUNT[list] - 1}`]: { $exists: false } };

  if (request.completes && !request.authorization) {
    const account = await accounts.findOne(owner, { projection: HOLD_FIELDS });
    const authorization = account ? findHold(account, request.completes) : undefined;
    if (authorization?.list === 'authorizationHolds') {
      const taken = await accounts.updateOne(
        { ...owner, ...room, authorizationHolds: authorization.entry, ...covered(amount - authorization.amount - overdraft) },
        {
          $pullAll: { authorizationHolds: [authorization.entry] },
          $push: { purchaseHolds: `${entry}|${authorization.entry}` },
          $inc: { availableBalance: authorization.amount - amount, holdsSeq: 1 },
          $min: { nextHoldExpiry: expires },
        },
      );
      if (taken.matchedCount === 1) return 'HELD';
      if (findHold((await accounts.findOne(owner, { projection: HOLD_FIELDS })) ?? {}, request.completes)) return refusal(db, owner, list);
      // The authorization's hold went meanwhile (reversed, expired, completed by another): a plain purchase.
    }
  }
  const taken = await accounts.updateOne(
    { ...owner, ...room, ...covered(amount - overdraft) },
    { $push: { [list]: entry }, $inc: { availableBalance: negate(amount), holdsSeq: 1 }, $min: { nextHoldExpiry: expires } },
  );
  return taken.matchedCount === 1 ? 'HELD' : refusal(db, owner, list);
}

/** Why a hold did not fit: a wrong account is the caller's fault (named), a full list or too little money the message's. */
async function refusal(db: Db, owner: { _id: string; SvcUserId: string; currency: string }, list: HoldList): Promise<CardHoldOutcome> {
  const account = await accountsCollection(db).findOne({ _id: owner._id }, { projection: { SvcUserId: 1, currency: 1, [list]: 1 } });
  if (!account || account.SvcUserId !== owner.SvcUserId)
    throw appError(ErrorCode.VALIDATION_FAILED, `No account ${owner._id} of user ${owner.SvcUserId}.`, { field: 'SvcAccountId' });
  if (account.currency !== owner.currency)
    throw appError(ErrorCode.VALIDATION_FAILED, `The account is in ${account.currency}, not ${owner.currency}.`, { field: 'currency' });
  return (account[list]?.length ?? 0) >= CARD_HOLDS_PER_ACCOUNT[list] ? 'TOO_MANY_HOLDS' : 'INSUFFICIENT_FUNDS';
}

/**
 * Releases holds, each at most once (the update's filter names its entry). `undo` is for a
 * deciding attempt that lost to another copy of its message: a purchase that completed an
 * authorization puts that authorization's hold back, if it has not expired and the account still
 * covers it. Answers how many this call released; an unknown or released hold is skipped.
 */
export async function releaseCardHolds(
  db: Db,
  policy: CardHoldPolicy,
  releases: readonly CardHoldRelease[],
  options: { undo?: boolean; now?: number } = {},
): Promise<number> {
  if (releases.length > CARD_HOLD_RELEASE_LIMIT)
    throw appError(ErrorCode.VALIDATION_FAILED, `input may name at most ${CARD_HOLD_RELEASE_LIMIT} holds.`, { field: 'input' });
  if (releases.length === 0) return 0;
  const now = options.now ?? Date.now();
  const accounts = accountsCollection(db);
  const found = await accounts
    .find({ _id: { $in: [...new Set(releases.map((release) => release.SvcAccountId))] } }, { projection: { ...HOLD_FIELDS, currency: 1 } })
    .toArray();
  const byId = new Map(found.map((account) => [account._id, account]));
  const writes: AnyBulkWriteOperation<AccountDocument>[] = [];
  for (const release of releases) {
    const account = byId.get(release.SvcAccountId);
    const hold = account ? findHold(account, release.holdId) : undefined;
    if (!account || !hold) continue;
    const restored = options.undo && hold.completed ? parseHold(hold.completed, 'authorizationHolds') : null;
    if (restored && restored.expires > now) {
      const overdraft = toMinor(String(policy.overdraftLimit), account.currency, 'overdraftLimit');
      // Put back only if it fits; otherwise the plain release below is all this undo does.
      writes.push({
        updateOne: {
          filter: {
            _id: account._id,
            [hold.list]: hold.entry,
            availableBalance: { $gte: minor(restored.amount - hold.amount - overdraft) },
            [`authorizationHolds.${CARD_HOLDS_PER_ACCOUNT.authorizationHolds - 1}`]: { $exists: false },
          },
          update: {
            $pullAll: { [hold.list]: [hold.entry] },
            $push: { authorizationHolds: restored.entry },
            $inc: { availableBalance: hold.amount - restored.amount, holdsSeq: 1 },
            $min: { nextHoldExpiry: restored.expires },
          },
        },
      });
    }
    writes.push({
      updateOne: {
        filter: { _id: account._id, [hold.list]: hold.entry },
        update: { $pullAll: { [hold.list]: [hold.entry] }, $inc: { availableBalance: hold.amount, holdsSeq: 1 } },
      },
    });
  }
  if (writes.length === 0) return 0;
  // In order: a restore that went through leaves its plain release nothing to match.
  const result = await accounts.bulkWrite(writes, { ordered: true });
  return result.modifiedCount;
}

/**
 * Releases every hold past its expiry on the accounts whose `nextHoldExpiry` is due (at most 100
 * a pass), then sets each one's `nextHoldExpiry` to its next hold's, only if no hold changed since
 * it was read (takes only ever lower it, by `$min`). Answers how many holds it released.
 */
export async function expireCardHolds(db: Db, now = Date.now()): Promise<number> {
  const accounts = accountsCollection(db);
  const due = await accounts.find({ nextHoldExpiry: { $lte: now } }, { projection: HOLD_FIELDS, limit: 100 }).toArray();
  let released = 0;
  for (const account of due) {
    const expired = holdsOf(account).filter((hold) => hold.expires <= now);
    if (expired.length > 0) {
      const result = await accounts.bulkWrite(
        expired.map((hold) => ({
          updateOne: {
            filter: { _id: account._id, [hold.list]: hold.entry },
            update: { $pullAll: { [hold.list]: [hold.entry] }, $inc: { availableBalance: hold.amount, holdsSeq: 1 } },
          },
        })),
        { ordered: false },
      );
      released += result.modifiedCount;
    }
    const after = await accounts.findOne({ _id: account._id }, { projection: HOLD_FIELDS });
    if (!after) continue;
    const next = Math.min(...holdsOf(after).map((hold) => hold.expires));
    await accounts.updateOne(
      { _id: account._id, holdsSeq: after.holdsSeq ?? { $exists: false } },
      Number.isFinite(next) ? { $set: { nextHoldExpiry: next } } : { $unset: { nextHoldExpiry: '' } },
    );
  }
  return released;
}

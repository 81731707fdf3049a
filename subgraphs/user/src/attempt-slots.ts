import { randomBytes } from 'node:crypto';
import { MongoServerError, type Collection, type Filter, type OptionalUnlessRequiredId } from 'mongodb';

const DUPLICATE_KEY = 11000;

/**
 * How long a reserved check holds its slot if the process that reserved it never settles it (a
 * crash): long enough for any real check, short enough that a lost one frees the slot soon.
 */
export const LEASE_MS = 20_000;

/**
 * How long an attempt waits for a slot while none frees (the checks in flight are stuck, or their
 * process died) before it is refused with TOO_MANY_ATTEMPTS.
 */
export const SLOT_WAIT_MS = 5_000;

/**
 * How long an attempt waits for a slot at most, however busy the slots are: by then every lease
 * seen at the start has been settled or has lapsed. Under the REST adapter's 30 s limit on a call,
 * so a waiter hears 429, not 503.
 */
const SLOT_WAIT_LONGEST_MS = LEASE_MS;

const FIRST_PAUSE_MS = 10;
const LONGEST_PAUSE_MS = 200;

/** One check in flight: it holds a slot until it is settled or `until` passes. */
export interface Lease {
  id: string;
  until: Date;
}

/** What a document with slots carries besides its own fields: the checks in flight and an optimistic version. */
export interface Leased {
  _id: string;
  leases?: Lease[];
  /**
   * A fresh random token on every write; a write is conditional on the version it read. Never a
   * counter: a document deleted and created again must not match a version read before.
   */
  version?: string;
}

/** What `transact` writes: nothing, the given fields (the document is created when missing), or a delete. */
export type Change<T> = { kind: 'keep' } | { kind: 'write'; set: Partial<T> } | { kind: 'delete' };

/** A new lease starting at `now`. */
export function newLease(now: Date): Lease {
  return { id: randomBytes(9).toString('base64url'), until: new Date(now.getTime() + LEASE_MS) };
}

/** The leases that still hold their slot at `now`. */
export function liveLeases(leases: readonly Lease[] | undefined, now: Date): Lease[] {
  return (leases ?? []).filter((lease) => lease.until.getTime() > now.getTime());
}

/** Whether `lease` is among `leases` (expired or not). */
export function holds(leases: readonly Lease[] | undefined, lease: Lease): boolean {
  return (leases ?? []).some((held) => held.id === lease.id);
}

/** `leases` without `lease`. */
export function without(leases: readonly Lease[], lease: Lease): Lease[] {
  return leases.filter((held) => held.id !== lease.id);
}

/** Whole seconds until the first of `leases` lapses (at least 1): when a slot frees at the latest. */
export function secondsUntilFirstLapse(leases: readonly Lease[], now: Date): number {
  const first = Math.min(...leases.map((lease) => lease.until.getTime()), now.getTime() + LEASE_MS);
  return Math.max(1, Math.ceil((first - now.getTime()) / 1000));
}

const newVersion = () => randomBytes(9).toString('base64url');

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Reads the document `id`, lets `decide` choose a change from it, and writes that change in one
 * single-document write conditional on the version read (and on the `pinned` fields keeping the
 * values read: a code replaced meanwhile is another code). When another writer came first, reads
 * again and decides again. State lives only in the database, so any number of processes can share
 * it; no transaction is needed.
 */
export async function transact<T extends Leased, R>(
  collection: Collection<T>,
  id: string,
  decide: (current: T | null, now: Date) => { change: Change<T>; result: R },
  pinned: ReadonlyArray<keyof T & string> = [],
): Promise<R> {
  for (let conflicts = 0; ; conflicts += 1) {
    const current = (await collection.findOne({ _id: id } as Filter<T>)) as T | null;
    const { change, result } = decide(current, new Date());
    if (change.kind === 'keep' || (change.kind === 'delete' && !current)) return result;
    if (await write(collection, id, current, change, pinned)) return result;
    // Spread racing writers apart, so one of them wins the next round.
    await pause(Math.random() * Math.min(2 + conflicts, 20));
  }
}

async function write<T extends Leased>(
  collection: Collection<T>,
  id: string,
  current: T | null,
  change: Change<T>,
  pinned: ReadonlyArray<keyof T & string>,
): Promise<boolean> {
  if (!current) {
    if (change.kind !== 'write') return true;
    try {
      await collection.insertOne({ ...change.set, _id: id, version: newVersion() } as OptionalUnlessRequiredId<T>);
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return false;
      throw error;
    }
  }
  const filter = {
    _id: id,
    version: current.version ?? { $exists: false },
    ...Object.fromEntries(pinned.map((field) => [field, current[field]])),
  } as Filter<T>;
  if (change.kind === 'delete') return (await collection.deleteOne(filter)).deletedCount === 1;
  if (change.kind !== 'write') return true;
  const updated = await collection.updateOne(filter, { $set: { ...change.set, version: newVersion() } });
  return updated.matchedCount === 1;
}

/** What a poll saw when every slot was taken: the document's version, and when a slot frees at the latest. */
export class SlotsTaken {
  constructor(
    readonly version: string | undefined,
    readonly retryAfterSeconds: number,
  ) {}
}

/**
 * Calls `poll` until it returns something other than SlotsTaken, pausing with a growing, jittered
 * backoff in between (waiters of several processes must not poll in step). Gives up, returning
 * the last SlotsTaken, once the document has not changed for `idleMs` (no check settled or
 * started: the slots are stuck) or after `longestMs` in all.
 */
export async function waitForSlot<R>(
  poll: () => Promise<R | SlotsTaken>,
  idleMs = SLOT_WAIT_MS,
  longestMs = SLOT_WAIT_LONGEST_MS,
): Promise<R | SlotsTaken> {
  const began = Date.now();
  let changed = began;
  let seen: string | undefined;
  for (let delay = FIRST_PAUSE_MS; ; delay = Math.min(delay * 2, LONGEST_PAUSE_MS)) {
    const result = await poll();
    if (!(result instanceof SlotsTaken)) return result;
    if (result.version !== seen) [seen, changed] = [result.version, Date.now()];
    const wait = delay / 2 + Math.random() * (delay / 2);
    const deadline = Math.min(changed + idleMs, began + longestMs);
    if (Date.now() + wait > deadline) return result;
    await pause(wait);
  }
}

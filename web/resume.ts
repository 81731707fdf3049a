// What the dashboard does with each subscription's payloads and the connection's ups and downs, under
// the gateway's resumption protocol: every `next` carries `extensions.position`; a subscription
// sent again with `extensions.after` first gets what it missed (`extensions.replayed: true`), then a
// payload without data whose extensions say `caughtUp: { replayed }`, then live events; a position
// the log no longer holds ends the subscription with EVENTS_EXPIRED. No DOM here: the unit tests
// run it as it is.

/** The error code that ends a subscription whose `after` is older than the event log keeps. */
export const EVENTS_EXPIRED = 'EVENTS_EXPIRED';

/** How long a resumed subscription may wait for its caughtUp marker before the dashboard stops waiting and reloads. */
export const CATCH_UP_LIMIT_MS = 10_000;

const POSITION = /^(\d+)-(\d+)$/;

/** Orders two log positions ("<milliseconds>-<sequence>"), as numbers: "9-0" comes before "10-0". */
export function comparePositions(a: string, b: string): number {
  const [, aTime = '0', aSequence = '0'] = POSITION.exec(a) ?? [];
  const [, bTime = '0', bSequence = '0'] = POSITION.exec(b) ?? [];
  return Number(aTime) - Number(bTime) || Number(aSequence) - Number(bSequence);
}

const positionIn = (value: unknown): string | null => (typeof value === 'string' && POSITION.test(value) ? value : null);

/** A `next` payload as graphql-ws hands it over. */
export interface NextPayload {
  data?: Record<string, unknown> | null;
  errors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> }>;
  extensions?: Record<string, unknown>;
}

/** What one payload means for the dashboard. */
export type Received =
  /** An event to apply; `resumeFailed` when the server went on live without replaying (it ignored `after`): reload the state. */
  | {
      kind: 'event';
      data: Record<string, unknown>;
      /** Its place in the log, when the server said it. */
      position: string | null;
      replayed: boolean;
      resumeFailed: boolean;
      errors: NextPayload['errors'];
    }
  /** The end of a catch-up: `replayed` events were sent again. */
  | { kind: 'caught-up'; replayed: number }
  /** Errors without data: the event could not be resolved for this subscriber. */
  | { kind: 'errors'; errors: NonNullable<NextPayload['errors']> }
  /** An event already applied (delivery is at least once), or a payload without data: nothing to show. */
  | { kind: 'ignore' };

/** One subscription of the dashboard, resumable from the last position it received. */
export class ResumableSubscription {
  /** What graphql-ws sends on every (re)subscribe: one object, so it carries the latest `after` when the client resubscribes after a reconnect. */
  readonly payload: { query: string; extensions?: { after: string } };
  private last: string | null = null;
  private catchingUp = false;
  private ended = false;

  constructor(
    readonly name: string,
    query: string,
  ) {
    this.payload = { query };
  }

  /** The position of the last event received; null before the first, or after a restart. */
  get position(): string | null {
    return this.last;
  }

  /** True from a resume until its caughtUp marker (or until the dashboard stops waiting). */
  get isCatchingUp(): boolean {
    return this.catchingUp;
  }

  /** True once the server ended it (an error, or complete): graphql-ws does not resubscribe it. */
  get isEnded(): boolean {
    return this.ended;
  }

  receive(result: NextPayload): Received {
    const extensions = result.extensions ?? {};
    const position = positionIn(extensions.position);
    if (!result.data) {
      const caughtUp = extensions.caughtUp as { replayed?: unknown } | undefined;
      if (caughtUp && typeof caughtUp === 'object') {
        if (position) this.advance(position);
        this.catchingUp = false;
        return { kind: 'caught-up', replayed: typeof caughtUp.replayed === 'number' ? caughtUp.replayed : 0 };
      }
      return result.errors?.length ? { kind: 'errors', errors: result.errors } : { kind: 'ignore' };
    }
    if (position && this.last && comparePositions(position, this.last) <= 0) return { kind: 'ignore' };
    if (position) this.advance(position);
    const replayed = extensions.replayed === true;
    // The protocol replays before anything live: a live event first means the server did not resume.
    const resumeFailed = this.catchingUp && !replayed;
    if (resumeFailed) this.catchingUp = false;
    return { kind: 'event', data: result.data, position, replayed, resumeFailed, errors: result.errors };
  }

  /**
   * The connection is back and graphql-ws is about to send the payload again: with the last
   * position it resumes (`resume`); without one nothing says what was missed (`reload` the state).
   */
  resume(): 'resume' | 'reload' | 'ended' {
    if (this.ended) return 'ended';
    if (!this.last) return 'reload';
    this.payload.extensions = { after: this.last };
    this.catchingUp = true;
    return 'resume';
  }

  /** Stops waiting for a caughtUp marker that has not come. */
  stopCatchingUp(): void {
    this.catchingUp = false;
  }

  /** The server ended it; `expired` when it was for EVENTS_EXPIRED (reload the state, subscribe again after `restart`). */
  end(error: unknown): 'expired' | 'failed' {
    this.ended = true;
    this.catchingUp = false;
    return isEventsExpired(error) ? 'expired' : 'failed';
  }

  /** Forgets the position, to subscribe afresh (without `after`) once the state is read again. */
  restart(): void {
    this.last = null;
    this.ended = false;
    this.catchingUp = false;
    delete this.payload.extensions;
  }

  private advance(position: string): void {
    if (this.last && comparePositions(position, this.last) <= 0) return;
    this.last = position;
    this.payload.extensions = { after: position };
  }
}

/** Whether a subscription's error (graphql-ws hands over the GraphQL errors as an array) is EVENTS_EXPIRED. */
export function isEventsExpired(error: unknown): boolean {
  const errors: unknown[] = Array.isArray(error) ? error : [error];
  return errors.some(
    (e) => typeof e === 'object' && e !== null && (e as { extensions?: { code?: unknown } }).extensions?.code === EVENTS_EXPIRED,
  );
}

/** What the status element says. */
export type Phase = 'connecting' | 'live' | 'reconnecting' | 'catching up';

/** The connection's state across reconnects, and the status line it makes. */
export class ResumeState {
  private everConnected = false;
  private open = false;
  private resumedAt = 0;
  /** Whether any subscription resumed at the last reconnect. */
  private resumed = false;
  private replayed = 0;
  /** After a reconnect: the events caught up, once every subscription has caught up; null before any reconnect. */
  private caughtUp: number | null = null;
  private reloaded = false;

  constructor(private readonly subscriptions: readonly ResumableSubscription[]) {}

  /** The client's `connected` event; after the first, every subscription resumes, and `reload` says whether the state must be read again. */
  connected(now: number): { reload: boolean } {
    this.open = true;
    if (!this.everConnected) {
      this.everConnected = true;
      return { reload: false };
    }
    this.resumedAt = now;
    this.replayed = 0;
    this.caughtUp = null;
    this.reloaded = false;
    this.resumed = false;
    let reload = false;
    for (const subscription of this.subscriptions) {
      const outcome = subscription.resume();
      if (outcome === 'reload') reload = true;
      if (outcome === 'resume') this.resumed = true;
    }
    this.settle();
    return { reload };
  }

  /** The client's `closed` event. */
  closed(): void {
    this.open = false;
  }

  /** A subscription's caughtUp marker. */
  caughtUpWith(replayed: number): void {
    this.replayed += replayed;
    this.settle();
  }

  /** The state was read again through the queries (a resume that failed, or EVENTS_EXPIRED). */
  stateReloaded(): void {
    this.reloaded = true;
    this.settle();
  }

  /** Stops waiting for caughtUp markers overdue at `now` (a server that does not resume); true when the state must be read again. */
  catchUpOverdue(now: number): boolean {
    if (this.phase() !== 'catching up' || now - this.resumedAt < CATCH_UP_LIMIT_MS) return false;
    for (const subscription of this.subscriptions) subscription.stopCatchingUp();
    this.settle();
    return true;
  }

  phase(): Phase {
    if (!this.everConnected) return 'connecting';
    if (!this.open) return 'reconnecting';
    return this.subscriptions.some((s) => s.isCatchingUp) ? 'catching up' : 'live';
  }

  /**
   * The status line: "Connecting…", "Live", "Reconnecting…", "Catching up…", and after a reconnect
   * "Live · caught up 3 events" (with "state reloaded" when the queries were read again).
   */
  text(): string {
    this.settle();
    switch (this.phase()) {
      case 'connecting':
        return 'Connecting…';
      case 'reconnecting':
        return 'Reconnecting…';
      case 'catching up':
        return this.replayed ? `Catching up… ${plural(this.replayed)} so far` : 'Catching up…';
      case 'live': {
        const parts = ['Live'];
        // After a reload the state is whole whatever was replayed: a count of none says nothing.
        if (this.caughtUp !== null && (!this.reloaded || this.caughtUp > 0)) parts.push(`caught up ${plural(this.caughtUp)}`);
        if (this.reloaded) parts.push('state reloaded');
        return parts.join(' · ');
      }
    }
  }

  private settle(): void {
    if (this.resumed && this.phase() === 'live' && this.caughtUp === null) this.caughtUp = this.replayed;
  }
}

const plural = (n: number) => `${n} event${n === 1 ? '' : 's'}`;

import type { GraphClient } from '../../../../platform/contracts/graph.js';
import type { BusEvent, EventBus } from '../../../../platform/messaging/event-bus.js';
import { SweepLoop } from '../../../../platform/messaging/sweep.js';
import { toMinor } from '../../../../platform/money/money.js';
import {
  effectiveRestrictions,
  evaluate,
  type ProceduralRestrictionDocument,
  type RestrictionDecision,
  type RestrictionDocument,
  type TransactionProposal,
  type TransactionTypeDocument,
} from '../../../../platform/domain/restrictions.js';
import type { Logger } from '../../../../platform/runtime/logger.js';

/**
 * How often the whole model is read again from compliance: the bound on a change whose event
 * never reached this service while its bus connection stayed up (compliance could not publish).
 */
const RESYNC_EVERY_MS = 30_000;
/** How long after a failed read the next one may start, so that a compliance outage is not hammered. */
const RETRY_AFTER_MS = 1000;

const RULES = `query ($ids: [ID!]) { restrictionRules(SvcUserIds: $ids) {
  transactionTypes { name isAllowed sourceAccountTypes destinationAccountTypes allowedTransactionCurrencies }
  defaults { ...rule }
  users { SvcUserId restrictions { ...rule } procedural { id name reason } }
} }
fragment rule on Restriction { restrictionId restrictionName txnTypes transactionCurrencies fromAmount fromAmountCurrency toAmount toAmountCurrency isAllowed isIgnoreRest priority }`;

/** A restriction as `restrictionRules` answers it: amounts are Decimal text. */
export interface RuleView {
  restrictionId: string;
  restrictionName: string;
  txnTypes: string[];
  transactionCurrencies: string[];
  fromAmount: string | null;
  fromAmountCurrency: string | null;
  toAmount: string | null;
  toAmountCurrency: string | null;
  isAllowed: boolean;
  isIgnoreRest: boolean;
  priority: number;
}
interface RulesView {
  transactionTypes: Array<Omit<TransactionTypeDocument, '_id'>>;
  defaults: RuleView[];
  users: Array<{ SvcUserId: string; restrictions: RuleView[]; procedural: Array<{ id: string; name: string; reason: string }> }>;
}

/** One user's own rules. */
interface UserRules {
  restrictions: RestrictionDocument[];
  procedural: ProceduralRestrictionDocument[];
}

const NO_RULES: UserRules = { restrictions: [], procedural: [] };

function ruleOf(view: RuleView, SvcUserId: string | null): RestrictionDocument {
  const bound = (amount: string | null, currency: string | null, field: string) =>
    amount === null || currency === null ? null : toMinor(amount, currency, field);
  return {
    _id: view.restrictionId,
    restrictionId: view.restrictionId,
    SvcUserId,
    restrictionName: view.restrictionName,
    description: null,
    txnTypes: view.txnTypes,
    transactionCurrencies: view.transactionCurrencies,
    fromAmount: bound(view.fromAmount, view.fromAmountCurrency, 'fromAmount'),
    fromAmountCurrency: view.fromAmountCurrency,
    toAmount: bound(view.toAmount, view.toAmountCurrency, 'toAmount'),
    toAmountCurrency: view.toAmountCurrency,
    isAllowed: view.isAllowed,
    isIgnoreRest: view.isIgnoreRest,
    priority: view.priority,
  };
}

function userRulesOf(view: RulesView['users'][number]): UserRules {
  return {
    restrictions: view.restrictions.map((rule) => ruleOf(rule, view.SvcUserId)),
    procedural: view.procedural.map((p) => ({
      _id: p.id,
      SvcUserId: view.SvcUserId,
      name: p.name,
      reason: p.reason,
      dtsCreated: new Date(0),
    })),
  };
}

/**
 * Compliance's restrictions as card authorization decides on them, held in this process and kept
 * current by compliance's `restrictions.changed` events: a user's event marks their rules untrusted
 * at once and reads them again; a platform-wide one (defaults, types) reads everything again.
 *
 * The model answers only while it holds: loaded, under the bus continuity it was loaded under (no
 * event can have been missed since), and not while the user's rules are being read again. Otherwise
 * `evaluate` answers null and the caller asks compliance through the graph, so a decision never
 * rests on rules older than the last event this service received. A full read every
 * RESYNC_EVERY_MS bounds a change whose event was never published.
 */
export class RestrictionReadModel {
  private types = new Map<string, TransactionTypeDocument>();
  private defaults: RestrictionDocument[] = [];
  private users = new Map<string, UserRules>();
  /** The bus continuity the model holds under; null until the first full read lands. */
  private heldUnder: number | null = null;
  /** Each user's latest read by generation; a read lands only if it is still the latest. */
  private readonly userGeneration = new Map<string, number>();
  /** Users whose rules are being read again: not trusted until it lands. */
  private readonly untrusted = new Set<string>();
  private generation = 0;
  private resyncing: Promise<void> | null = null;
  private resyncAgain = false;
  private failedAt = -Infinity;
  private unsubscribe: (() => void) | null = null;
  private readonly loop: SweepLoop;
  /** When the last full read landed (performance.now()). */
  private readAt = -Infinity;

  constructor(
    private readonly bus: EventBus,
    private readonly graph: GraphClient,
    private readonly logger: Logger,
    private readonly everyMs = RESYNC_EVERY_MS,
  ) {
    this.loop = new SweepLoop('restriction model resync', () => this.resync(), everyMs, logger);
  }

  /**
   * Listens for changes, and reads the whole model again every RESYNC_EVERY_MS. The first read
   * waits for the first card message: at start the graph it reads through may not be up yet.
   */
  start(): this {
    this.unsubscribe = this.bus.subscribe((event) => this.onEvent(event));
    this.loop.start(false);
    return this;
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    await this.loop.stop();
    await this.resyncing;
  }

  /**
   * Whether the model holds now: loaded, no event missed since, and read in full within two
   * periods (full reads that keep failing must not leave a change that was never announced out
   * for longer than the bound).
   */
  holds(): boolean {
    const continuity = this.bus.continuity();
    return continuity !== null && continuity === this.heldUnder && performance.now() - this.readAt <= 2 * this.everyMs;
  }

  /**
   * Decides a proposal for a user from the model with the shared engine, or null when the model
   * may be behind (see the class): the caller then asks compliance.
   */
  evaluate(SvcUserId: string, proposal: TransactionProposal): RestrictionDecision | null {
    if (!this.holds()) {
      this.requestResync();
      return null;
    }
    if (this.untrusted.has(SvcUserId)) return null;
    const own = this.users.get(SvcUserId) ?? NO_RULES;
    return evaluate(
      proposal,
      own.procedural,
      this.types.get(proposal.txnType) ?? null,
      effectiveRestrictions(own.restrictions, this.defaults),
    );
  }

  /** Waits for the full read under way, if any (tests, and a start that wants the model warm). */
  async settled(): Promise<void> {
    while (this.resyncing) await this.resyncing;
  }

  private onEvent(event: BusEvent): void {
    if (event.type !== 'restrictions.changed') return;
    const { SvcUserId } = event.payload as { SvcUserId?: unknown };
    if (typeof SvcUserId === 'string') {
      void this.reread(SvcUserId);
    } else {
      // Defaults or types changed: nobody's rules are trusted until everything is read again.
      this.heldUnder = null;
      this.requestResync(true);
    }
  }

  /** Reads one user's rules again; they are untrusted from now until the read lands. */
  private async reread(SvcUserId: string): Promise<void> {
    const generation = (this.generation += 1);
    this.userGeneration.set(SvcUserId, generation);
    this.untrusted.add(SvcUserId);
    try {
      const rules = await this.fetch([SvcUserId]);
      if (this.userGeneration.get(SvcUserId) !== generation) return;
      const own = rules.users.find((user) => user.SvcUserId === SvcUserId);
      if (own && (own.restrictions.length > 0 || own.procedural.length > 0)) this.users.set(SvcUserId, userRulesOf(own));
      else this.users.delete(SvcUserId);
      this.untrusted.delete(SvcUserId);
    } catch (error) {
      // The user stays untrusted (decided through compliance) until the next full read lands.
      this.logger.warn("restriction model: reading a user's rules failed", { SvcUserId, error: (error as Error).message });
      this.requestResync();
    }
  }

  /** Starts a full read unless one runs (then, when `again`, another after it) or one failed a moment ago. */
  private requestResync(again = false): void {
    if (this.resyncing) {
      this.resyncAgain ||= again;
      return;
    }
    if (!again && performance.now() - this.failedAt < Math.min(RETRY_AFTER_MS, this.everyMs)) return;
    this.resync().catch((error: unknown) =>
      this.logger.warn('restriction model: reading the rules failed; card messages are evaluated by compliance', {
        error: (error as Error).message,
      }),
    );
  }

  /** Reads every rule again and holds them under the bus continuity taken before the read. */
  private resync(): Promise<void> {
    if (this.resyncing) return this.resyncing;
    // While the bus is down nothing read could be held: the first message after it is back asks again.
    if (this.bus.continuity() === null) return Promise.resolve();
    this.resyncing = (async () => {
      do {
        this.resyncAgain = false;
        const continuity = this.bus.continuity();
        if (continuity === null) return;
        // Users whose own read starts after this one keep what their own read brings.
        const startedAt = this.generation;
        let rules: RulesView;
        try {
          rules = await this.fetch(null);
        } catch (error) {
          this.failedAt = performance.now();
          throw error;
        }
        const users = new Map<string, UserRules>();
        for (const user of rules.users) users.set(user.SvcUserId, userRulesOf(user));
        for (const [SvcUserId, generation] of this.userGeneration) {
          if (generation <= startedAt) {
            this.userGeneration.delete(SvcUserId);
            this.untrusted.delete(SvcUserId);
            continue;
          }
          const kept = this.users.get(SvcUserId);
          if (kept) users.set(SvcUserId, kept);
          else users.delete(SvcUserId);
        }
        this.types = new Map(rules.transactionTypes.map((type) => [type.name, { _id: type.name, ...type }]));
        this.defaults = rules.defaults.map((rule) => ruleOf(rule, null));
        this.users = users;
        // A platform-wide change announced during the read may not be in it.
        this.heldUnder = this.announcedDuringRead() ? null : continuity;
        this.readAt = performance.now();
      } while (this.announcedDuringRead() || (this.bus.continuity() !== null && this.bus.continuity() !== this.heldUnder));
    })().finally(() => {
      this.resyncing = null;
    });
    return this.resyncing;
  }

  /** Whether a platform-wide change was announced since the read under way started. */
  private announcedDuringRead(): boolean {
    return this.resyncAgain;
  }

  private async fetch(SvcUserIds: string[] | null): Promise<RulesView> {
    const { restrictionRules } = await this.graph.request<{ restrictionRules: RulesView }>(RULES, { ids: SvcUserIds });
    return restrictionRules;
  }
}

import { describe, expect, it } from 'vitest';
import type { GraphClient } from '../../platform/contracts/graph.js';
import { InProcessBus, type BusEvent } from '../../platform/messaging/event-bus.js';
import { toMinor } from '../../platform/money/money.js';
import type { TransactionProposal } from '../../platform/domain/restrictions.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { TRANSACTION_TYPES } from '../../subgraphs/compliance/src/seed.js';
import { RestrictionReadModel, type RuleView } from '../../subgraphs/cards/src/authorization/restriction-model.js';

/** A bus whose connection can be cut: while cut it delivers nothing and reports no continuity, and each cut starts a new one. */
class CuttableBus extends InProcessBus {
  private epoch = 0;
  private cut = false;
  override async publish(event: BusEvent): Promise<void> {
    if (!this.cut) await super.publish(event);
  }
  override continuity(): number | null {
    return this.cut ? null : this.epoch;
  }
  down(): void {
    this.cut = true;
    this.epoch += 1;
  }
  up(): void {
    this.cut = false;
  }
}

/** Compliance as the model reads it through the graph: the rules it holds now, answered after an optional hold. */
class FakeCompliance implements GraphClient {
  readonly defaults: RuleView[] = [allowUpTo('default', '1000.00')];
  readonly users = new Map<string, { restrictions: RuleView[]; procedural: Array<{ id: string; name: string; reason: string }> }>();
  reads: Array<string[] | null> = [];
  hold: Promise<void> | null = null;
  down = false;

  async request<T>(_query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const ids = variables.ids as string[] | null;
    this.reads.push(ids);
    if (this.down) throw new Error('compliance is unavailable');
    // Read now, answered after the hold: what a slow answer carries is what was true when it was read.
    const answer = {
      restrictionRules: {
        transactionTypes: TRANSACTION_TYPES.map(({ _id: _ignored, ...type }) => type),
        defaults: [...this.defaults],
        users: (ids ?? [...this.users.keys()]).map((SvcUserId) => ({
          SvcUserId,
          restrictions: [...(this.users.get(SvcUserId)?.restrictions ?? [])],
          procedural: [...(this.users.get(SvcUserId)?.procedural ?? [])],
        })),
      },
    };
    if (this.hold) await this.hold;
    return answer as T;
  }
}

function allowUpTo(restrictionName: string, toAmount: string): RuleView {
  return {
    restrictionId: restrictionName,
    restrictionName,
    txnTypes: ['*'],
    transactionCurrencies: ['USD'],
    fromAmount: null,
    fromAmountCurrency: null,
    toAmount,
    toAmountCurrency: 'USD',
    isAllowed: true,
    isIgnoreRest: false,
    priority: 1,
  };
}

const purchase = (amount: number): TransactionProposal => ({
  txnType: 'USA',
  amount: toMinor(amount, 'USD', 'amount'),
  currency: 'USD',
  sourceAccountType: 'checking',
});
const changed = (SvcUserId: string | null): BusEvent => ({
  id: `evt_${Math.random()}`,
  type: 'restrictions.changed',
  audience: SvcUserId ? { SvcUserId } : {},
  payload: { SvcUserId },
  dtsCreated: new Date().toISOString(),
});
const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
};

function model(everyMs = 60_000) {
  const bus = new CuttableBus();
  const compliance = new FakeCompliance();
  const rules = new RestrictionReadModel(bus, compliance, createLogger('silent'), everyMs).start();
  return { bus, compliance, rules };
}

describe('the restriction read model of card authorization', () => {
  it('answers nothing until its first read lands, then decides with the shared engine, including the defaults for a user without rules', async () => {
    const { compliance, rules } = model();
    expect(rules.evaluate('u1', purchase(10))).toBeNull();
    await rules.settled();
    expect(compliance.reads).toEqual([null]);
    expect(rules.evaluate('u1', purchase(10))).toMatchObject({ allowed: true, rule: 'default' });
    expect(rules.evaluate('u1', purchase(1500))).toMatchObject({ allowed: false, decidedBy: 'default' });
    await rules.stop();
  });

  it("distrusts a user's rules from the moment their change event arrives until they are read again", async () => {
    const { bus, compliance, rules } = model();
    rules.evaluate('u1', purchase(1));
    await rules.settled();
    compliance.users.set('u1', { restrictions: [], procedural: [{ id: 'p1', name: 'AML review', reason: 'Under review.' }] });
    let release = () => {};
    compliance.hold = new Promise((resolve) => (release = resolve));
    await bus.publish(changed('u1'));
    // The read is held: the user's decisions go to compliance meanwhile; other users' stay local.
    expect(rules.evaluate('u1', purchase(10))).toBeNull();
    expect(rules.evaluate('u2', purchase(10))).toMatchObject({ allowed: true });
    release();
    compliance.hold = null;
    await until(() => rules.evaluate('u1', purchase(10)) !== null);
    expect(rules.evaluate('u1', purchase(10))).toMatchObject({ allowed: false, decidedBy: 'procedural', rule: 'AML review' });
    expect(compliance.reads.at(-1)).toEqual(['u1']);
    await rules.stop();
  });

  it('decides nothing from the model while the bus is down, and reads everything again once it is back, so a change made meanwhile counts', async () => {
    const { bus, compliance, rules } = model();
    rules.evaluate('u1', purchase(1));
    await rules.settled();
    bus.down();
    expect(rules.evaluate('u1', purchase(10))).toBeNull();
    // Changed while the bus is down: the event is lost.
    compliance.users.set('u1', { restrictions: [allowUpTo('small', '5.00')], procedural: [] });
    await bus.publish(changed('u1'));
    expect(rules.evaluate('u1', purchase(10))).toBeNull();
    bus.up();
    // Back under a new continuity: nothing is decided locally until the full read lands.
    expect(rules.evaluate('u1', purchase(10))).toBeNull();
    await rules.settled();
    expect(rules.evaluate('u1', purchase(10))).toMatchObject({ allowed: false, decidedBy: 'default' });
    expect(rules.evaluate('u1', purchase(5))).toMatchObject({ allowed: true, rule: 'small' });
    await rules.stop();
  });

  it('picks up a change whose event was never published within one resync period', async () => {
    const { compliance, rules } = model(50);
    rules.evaluate('u1', purchase(1));
    await rules.settled();
    compliance.defaults.splice(0, 1, allowUpTo('default', '2000.00'));
    expect(rules.evaluate('u1', purchase(1500))).toMatchObject({ allowed: false });
    await until(() => rules.evaluate('u1', purchase(1500))?.allowed === true);
    await rules.stop();
  });

  it('stops deciding from the model when its full reads keep failing, so an unannounced change cannot go unseen past the bound', async () => {
    const { compliance, rules } = model(50);
    rules.evaluate('u1', purchase(1));
    await rules.settled();
    expect(rules.evaluate('u1', purchase(10))).not.toBeNull();
    compliance.down = true;
    await until(() => rules.evaluate('u1', purchase(10)) === null);
    compliance.down = false;
    await until(() => rules.evaluate('u1', purchase(10)) !== null);
    await rules.stop();
  });

  it("keeps a user's newer read over a full read that started before it, and distrusts everyone while the defaults change", async () => {
    const { bus, compliance, rules } = model();
    rules.evaluate('u1', purchase(1));
    await rules.settled();
    // A full read starts (the defaults changed) and is held with the old rules of u1.
    let release = () => {};
    compliance.hold = new Promise((resolve) => (release = resolve));
    await bus.publish(changed(null));
    expect(rules.evaluate('u2', purchase(10))).toBeNull();
    // Then u1 changes; their own read starts after the full one and lands first.
    compliance.hold = null;
    compliance.users.set('u1', { restrictions: [allowUpTo('tiny', '1.00')], procedural: [] });
    await bus.publish(changed('u1'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await rules.settled();
    expect(rules.evaluate('u1', purchase(2))).toMatchObject({ allowed: false });
    expect(rules.evaluate('u1', purchase(1))).toMatchObject({ allowed: true, rule: 'tiny' });
    await rules.stop();
  });
});

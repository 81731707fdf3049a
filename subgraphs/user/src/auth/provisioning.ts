import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { hashPassword } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE } from '../../../../platform/security/validate.js';
import type { AuthCollections } from './datasource.js';
import { checkNewPassword } from './aggregator.js';

/**
 * Aggregator clients and their users, created by an operator (the spec documents no endpoint for
 * it): `npm run provision` and the demo seed both come here. Each is created once; provisioning
 * one that exists changes nothing, so a re-run is safe and never resets a password.
 */
export class AggregatorProvisioning {
  constructor(
    private readonly auth: AuthCollections,
    private readonly audit: AuditTrail | null,
  ) {}

  /** Whether an aggregator client exists (a merchant is provisioned only for one that does). */
  async hasAggregator(svcAggregatorId: string): Promise<boolean> {
    return (await this.auth.aggregators.findOne({ _id: svcAggregatorId }, { projection: { _id: 1 } })) !== null;
  }

  /** Creates an aggregator client; false when it exists already. */
  async createAggregator(svcAggregatorId: string, name: string): Promise<boolean> {
    checkString(svcAggregatorId, 'svcAggregatorId', ID_RULE);
    checkString(name, 'name', { min: 1, max: 100, safeText: true });
    const result = await this.auth.aggregators.updateOne(
      { _id: svcAggregatorId },
      { $setOnInsert: { svcAggregatorId, name, dtsCreated: new Date() } },
      { upsert: true },
    );
    if (result.upsertedCount === 0) return false;
    await this.audit?.record('AGGREGATOR_CREATED', { type: 'aggregator', id: svcAggregatorId }, { name });
    return true;
  }

  /** Creates a user of an existing aggregator, with a password that meets the spec's rules; false when the login exists. */
  async createAggregatorUser(svcAggregatorId: string, login: string, password: string): Promise<boolean> {
    checkString(login, 'login', ID_RULE);
    checkNewPassword(password);
    if (!(await this.hasAggregator(svcAggregatorId))) throw new Error(`No aggregator ${svcAggregatorId}: provision it first.`);
    // Hashing is deliberately slow: a login that exists is found before it.
    if (await this.auth.aggregatorUsers.findOne({ _id: login.toLowerCase() }, { projection: { _id: 1 } })) return false;
    const now = new Date();
    const result = await this.auth.aggregatorUsers.updateOne(
      { _id: login.toLowerCase() },
      { $setOnInsert: { login, svcAggregatorId, passwordHash: await hashPassword(password), dtsCreated: now, dtsPasswordChanged: now } },
      { upsert: true },
    );
    if (result.upsertedCount === 0) return false;
    await this.audit?.record('AGGREGATOR_USER_CREATED', { type: 'aggregatorUser', id: login }, { svcAggregatorId });
    return true;
  }
}

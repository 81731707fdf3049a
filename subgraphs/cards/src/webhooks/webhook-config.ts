import type { Db } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { checkString, ID_RULE } from '../../../../platform/security/validate.js';
import { checkWebhookTarget, newWebhookSecret } from '../../../../platform/messaging/webhooks.js';
import { DEFAULT_STRATEGIES, webhookConfigsCollection } from './datasource.js';
import { isOneOf } from '../../../../platform/contracts/own.js';

/** Sets an aggregator's webhook; a secret is generated when there is none or on rotation, and returned this once. The change is audited. */
export async function configureWebhook(
  db: Db,
  logger: Logger,
  audit: AuditTrail,
  svcAggregatorId: string,
  input: { url: string; defaultStrategy: string; timeoutMs?: number | null; rotateSecret?: boolean | null },
  allowInternal: boolean,
) {
  checkString(svcAggregatorId, 'svcAggregatorId', ID_RULE);
  const url = new URL(await checkWebhookTarget(input.url, 'url', allowInternal));
  const { defaultStrategy } = input;
  if (!isOneOf(DEFAULT_STRATEGIES, defaultStrategy))
    throw appError(ErrorCode.VALIDATION_FAILED, 'defaultStrategy must be approve or decline.', { field: 'defaultStrategy' });
  const timeoutMs = input.timeoutMs ?? 2000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 10_000)
    throw appError(ErrorCode.VALIDATION_FAILED, 'timeoutMs must be an integer from 100 to 10000.', { field: 'timeoutMs' });
  const configs = webhookConfigsCollection(db);
  const existing = await configs.findOne({ _id: svcAggregatorId });
  const secret = !existing || input.rotateSecret ? newWebhookSecret() : null;
  await configs.updateOne(
    { _id: svcAggregatorId },
    { $set: { url: url.toString(), defaultStrategy, timeoutMs, dtsUpdated: new Date(), ...(secret ? { secret } : {}) } },
    { upsert: true },
  );
  logger.info('webhook configured', { svcAggregatorId, url: url.origin, defaultStrategy, secretRotated: Boolean(secret) });
  // The origin only: a path or query may carry the receiver's own token.
  await audit.record(
    'WEBHOOK_CONFIGURED',
    { type: 'aggregatorCardWebhook', id: svcAggregatorId },
    { origin: url.origin, defaultStrategy, timeoutMs, secretRotated: Boolean(secret) },
  );
  return { svcAggregatorId, url: url.toString(), defaultStrategy, timeoutMs, secret };
}

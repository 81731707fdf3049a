// Provisions aggregator clients and their users (there is no documented endpoint for it):
//   npm run provision -- aggregator <svcAggregatorId> <name>
//   npm run provision -- aggregator-user <svcAggregatorId> <login>   (password read from AGGREGATOR_PASSWORD, or generated and printed once)
//   npm run provision -- webhook <svcAggregatorId> <url> <approve|decline> [timeoutMs]   (the signing secret is printed once)
//   npm run provision -- merchant <svcAggregatorId> <svcMerchantId> <name> [email|webhook] [webhookUrl]   (a new merchant's signing secret is printed once)
import { randomBytes } from 'node:crypto';
import { backgroundAuditTrail } from '../platform/messaging/audit.js';
import { loadConfig } from '../platform/runtime/config.js';
import { checkString, ID_RULE } from '../platform/security/validate.js';
import { AggregatorProvisioning } from '../subgraphs/user/src/auth/provisioning.js';
import { authCollections } from '../subgraphs/user/src/auth/datasource.js';
import { createLogger } from '../platform/runtime/logger.js';
import { configureWebhook } from '../subgraphs/cards/src/webhooks/webhook-config.js';
import { Merchants } from '../subgraphs/payments/src/merchants/merchants.js';
import { openDatabase } from '../platform/mongo/open.js';

const [command, id, third, fourth, fifth, sixth] = process.argv.slice(2);
const usage =
  'usage: npm run provision -- aggregator <svcAggregatorId> <name> | aggregator-user <svcAggregatorId> <login> | webhook <svcAggregatorId> <url> <approve|decline> [timeoutMs] | merchant <svcAggregatorId> <svcMerchantId> <name> [email|webhook] [webhookUrl]';
if (!command || !id || !third || !['aggregator', 'aggregator-user', 'webhook', 'merchant'].includes(command)) {
  console.error(usage);
  process.exit(2);
}
const config = loadConfig();
const { mongo, embedded } = await openDatabase(config);
const logger = createLogger('warn');
// Provisioning is audited as the `provision` tool: an operator's act outside any request, in the
// outbox of the service whose data it changes, which forwards it to the audit log.
const auditOf = (service: 'user' | 'cards' | 'payments') =>
  backgroundAuditTrail(mongo.db(service), logger, { kind: 'service', service: 'provision' });
try {
  checkString(id, 'svcAggregatorId', ID_RULE);
  const provisioning = new AggregatorProvisioning(authCollections(mongo.db('user')), auditOf('user'));
  if (command === 'webhook') {
    const result = await configureWebhook(
      mongo.db('cards'),
      logger,
      auditOf('cards'),
      id,
      { url: third, defaultStrategy: fourth ?? '', timeoutMs: fifth ? Number(fifth) : null },
      config.webhookAllowInternal,
    );
    console.log(`Webhook of ${id}: ${result.url}, default strategy ${result.defaultStrategy}, timeout ${result.timeoutMs} ms.`);
    if (result.secret) console.log(`Signing secret (shown once): ${result.secret}`);
  } else if (command === 'merchant') {
    if (!(await provisioning.hasAggregator(id))) throw new Error(`No aggregator ${id}: provision it first.`);
    const merchants = new Merchants(mongo.db('payments'), config.jwtSecret, logger, config.webhookAllowInternal, auditOf('payments'));
    const { merchant, webhookSecret } = await merchants.save(id, {
      svcMerchantId: third,
      name: fourth ?? null,
      linkDelivery: fifth ?? null,
      webhookUrl: sixth,
    });
    console.log(
      `Merchant ${merchant.svcMerchantId} of ${id}: ${merchant.name}, links delivered by ${merchant.linkDelivery}${merchant.webhookUrl ? ` to ${merchant.webhookUrl}` : ''}.`,
    );
    if (webhookSecret) console.log(`Webhook signing secret (shown once): ${webhookSecret}`);
  } else if (command === 'aggregator') {
    const created = await provisioning.createAggregator(id, third);
    console.log(created ? `Aggregator ${id} created.` : `Aggregator ${id} already exists; nothing changed.`);
  } else {
    // A generated password meets every rule of the spec: letters of both cases, digits and a symbol.
    const password = process.env.AGGREGATOR_PASSWORD ?? `${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}aA1!`;
    if (!(await provisioning.createAggregatorUser(id, third, password))) console.log(`User ${third} already exists; nothing changed.`);
    else
      console.log(
        process.env.AGGREGATOR_PASSWORD ? `User ${third} created.` : `User ${third} created with password (shown once): ${password}`,
      );
  }
} catch (error) {
  console.error((error as Error).message);
  process.exitCode = 1;
} finally {
  await mongo.close();
  await embedded?.stop();
}

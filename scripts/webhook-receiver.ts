// `npm run webhook-receiver`: the demo aggregator's card-authorization endpoint on port 9000, for
// trying POST /ibis-sandbox/webhook/init by hand. RESPONSE_CODE (default 00) is its answer.
import { DEMO } from '../platform/domain/demo.js';
import { startWebhookReceiver } from './lib/webhook-receiver.js';

const port = Number(process.env.PORT ?? 9000);
const receiver = await startWebhookReceiver(process.env.WEBHOOK_SECRET ?? DEMO.webhook.secret, port, '127.0.0.1', (webhook) => {
  console.log(
    `${webhook.verified ? 'verified' : 'BAD SIGNATURE'} ${webhook.id} ${String(webhook.payload.messageType)} ${String(webhook.payload.actionType)} ${String(webhook.payload.amount)} ${String(webhook.payload.currency)}`,
  );
});
receiver.setMode({ reply: process.env.RESPONSE_CODE ?? '00' });
console.log(`Listening for card-authorization webhooks at ${receiver.url}`);

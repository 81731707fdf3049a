// The live dashboard: logs in over the gateway's own GraphQL, subscribes over graphql-ws, and
// shows events as they arrive with a per-minute chart of authorizations and declines.
import { createClient, type Client } from 'graphql-ws';
import { DASHBOARD_DOCUMENTS as D } from './operations.js';

type Role = 'aggregator' | 'user';
interface Credentials {
  role: Role;
  headers: Record<string, string>;
}
interface EventRow {
  at: Date;
  kind: string;
  title: string;
  detail: string;
  declined?: boolean;
}

const SUBSCRIPTIONS: Record<
  Role,
  Array<{ name: string; query: string; describe: (data: Record<string, unknown>) => Omit<EventRow, 'at'> }>
> = {
  user: [
    {
      name: 'cardAuthorizations',
      query: D.userCardAuthorizations,
      describe: (d) => authorization(d.cardAuthorizations as Authorization),
    },
    {
      name: 'cardStatusChanged',
      query: D.userCardStatusChanged,
      describe: (d) => {
        const card = d.cardStatusChanged as { SvcCardId: string; name: string | null; lastFour: string; status: string };
        return { kind: 'card', title: `Card ${card.name ?? card.SvcCardId} (…${card.lastFour}) is ${card.status}`, detail: card.SvcCardId };
      },
    },
  ],
  aggregator: [
    {
      name: 'cardAuthorizations',
      query: D.aggregatorCardAuthorizations,
      describe: (d) => authorization(d.cardAuthorizations as Authorization),
    },
    {
      name: 'paymentLinkStatusChanged',
      query: D.paymentLinkStatusChanged,
      describe: (d) => {
        const link = d.paymentLinkStatusChanged as {
          svcTransactionId: string;
          status: string;
          amount: string;
          currency: string;
          payerName: string | null;
          merchant: { name: string } | null;
        };
        return {
          kind: 'payment link',
          title: `${link.merchant?.name ?? 'Link'}: ${link.amount} ${link.currency} is ${link.status}`,
          detail: `${link.svcTransactionId}${link.payerName ? ` · ${link.payerName}` : ''}`,
        };
      },
    },
    {
      name: 'achPaymentUpdated',
      query: D.achPaymentUpdated,
      describe: (d) => {
        const ach = d.achPaymentUpdated as { svcTransactionId: string; status: string; returnCode: string | null; amount: string };
        return {
          kind: 'ach',
          title: `ACH ${ach.amount} USD is ${ach.status}${ach.returnCode ? ` (${ach.returnCode})` : ''}`,
          detail: ach.svcTransactionId,
        };
      },
    },
    {
      name: 'kycApplicationCompleted',
      query: D.kycApplicationCompleted,
      describe: (d) => {
        const app = d.kycApplicationCompleted as { applicationId: string; customerId: string; outcome: string | null };
        return {
          kind: 'kyc',
          title: `Application of ${app.customerId} completed: ${app.outcome ?? 'no outcome'}`,
          detail: app.applicationId,
        };
      },
    },
    {
      name: 'webhookDeliveryAttempted',
      query: D.webhookDeliveryAttempted,
      describe: (d) => {
        const delivery = d.webhookDeliveryAttempted as {
          deliveryId: string;
          eventType: string;
          status: string;
          attempts: Array<{ number: number; outcome: string; httpStatus: number | null }>;
        };
        const last = delivery.attempts.at(-1);
        return {
          kind: 'webhook',
          title: `${delivery.eventType} attempt ${last?.number ?? '?'}: ${last?.outcome ?? delivery.status}${last?.httpStatus ? ` (${last.httpStatus})` : ''}`,
          detail: delivery.deliveryId,
        };
      },
    },
  ],
};

interface Authorization {
  messageId: string;
  messageType: string;
  approved: boolean;
  responseCode: string;
  amount: string;
  currency: string;
  reason: string;
  card?: { name: string | null; lastFour: string } | null;
}

function authorization(a: Authorization): Omit<EventRow, 'at'> {
  const card = a.card ? ` on ${a.card.name ?? 'card'} …${a.card.lastFour}` : '';
  return {
    kind: 'authorization',
    title: `${a.messageType} ${a.amount} ${a.currency}${card}: ${a.approved ? 'approved' : `declined (${a.responseCode})`}`,
    detail: `${a.messageId} · ${a.reason}`,
    declined: !a.approved,
  };
}

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the element type its selector finds, as with querySelector<E>.
const $ = <T extends HTMLElement>(selector: string) => document.querySelector(selector) as T;

async function graphql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: T; errors?: Array<{ message: string }> };
  if (body.errors?.length) throw new Error(body.errors[0]!.message);
  return body.data!;
}

async function logIn(role: Role, login: string, password: string): Promise<Credentials> {
  if (role === 'aggregator') {
    const data = await graphql<{ aggregatorGetToken: { token: string } }>(D.aggregatorLogin, { input: { login, password } });
    return { role, headers: { 'x-svc-token': data.aggregatorGetToken.token } };
  }
  const data = await graphql<{ login: { token: string } }>(D.userLogin, { input: { channel: 'internet', userName: login, password } });
  return { role, headers: { token: data.login.token } };
}

/** Authorizations and declines per minute over the last 15 minutes, drawn on a canvas. */
class MinuteChart {
  private readonly buckets = new Map<number, { approved: number; declined: number }>();
  constructor(private readonly canvas: HTMLCanvasElement) {}

  add(at: Date, declined: boolean): void {
    const minute = Math.floor(at.getTime() / 60_000);
    const bucket = this.buckets.get(minute) ?? { approved: 0, declined: 0 };
    bucket[declined ? 'declined' : 'approved'] += 1;
    this.buckets.set(minute, bucket);
    this.draw();
  }

  draw(): void {
    const context = this.canvas.getContext('2d');
    if (!context) return;
    const { width, height } = this.canvas;
    context.clearRect(0, 0, width, height);
    const now = Math.floor(Date.now() / 60_000);
    const minutes = Array.from({ length: 15 }, (_, i) => now - 14 + i);
    const max = Math.max(
      1,
      ...minutes.map((m) => {
        const b = this.buckets.get(m);
        return b ? b.approved + b.declined : 0;
      }),
    );
    const slot = width / minutes.length;
    minutes.forEach((minute, i) => {
      const bucket = this.buckets.get(minute) ?? { approved: 0, declined: 0 };
      const approvedHeight = (bucket.approved / max) * (height - 20);
      const declinedHeight = (bucket.declined / max) * (height - 20);
      context.fillStyle = '#2a9d5c';
      context.fillRect(i * slot + 4, height - 16 - approvedHeight, slot - 8, approvedHeight);
      context.fillStyle = '#d1495b';
      context.fillRect(i * slot + 4, height - 16 - approvedHeight - declinedHeight, slot - 8, declinedHeight);
      context.fillStyle = '#666';
      context.font = '10px system-ui';
      if (i % 3 === 2) context.fillText(new Date(minute * 60_000).toISOString().slice(11, 16), i * slot + 2, height - 3);
    });
    this.canvas.dataset.approved = String([...this.buckets.values()].reduce((s, b) => s + b.approved, 0));
    this.canvas.dataset.declined = String([...this.buckets.values()].reduce((s, b) => s + b.declined, 0));
  }
}

function show(row: EventRow): void {
  const item = document.createElement('li');
  item.className = `event ${row.kind.replace(/\s/g, '-')}${row.declined ? ' declined' : ''}`;
  const time = document.createElement('time');
  time.textContent = row.at.toLocaleTimeString();
  const title = document.createElement('strong');
  title.textContent = row.title;
  const detail = document.createElement('small');
  detail.textContent = row.detail;
  item.append(time, title, detail);
  $('#events').prepend(item);
  while ($('#events').children.length > 200) $('#events').lastElementChild?.remove();
}

let client: Client | null = null;

function connect(credentials: Credentials, chart: MinuteChart): void {
  void client?.dispose();
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  client = createClient({ url, connectionParams: credentials.headers, retryAttempts: 5 });
  client.on('connected', () => ($('#status').textContent = `Connected as ${credentials.role}; waiting for events…`));
  client.on('closed', () => ($('#status').textContent = 'Disconnected.'));
  for (const subscription of SUBSCRIPTIONS[credentials.role]) {
    client.subscribe(
      { query: subscription.query },
      {
        next: ({ data, errors }) => {
          if (errors?.length) {
            show({ at: new Date(), kind: 'error', title: errors[0]!.message, detail: subscription.name });
            return;
          }
          if (!data) return;
          const row = { at: new Date(), ...subscription.describe(data) };
          show(row);
          if (row.kind === 'authorization') chart.add(row.at, row.declined ?? false);
        },
        error: (error) =>
          show({
            at: new Date(),
            kind: 'error',
            title: 'Subscription refused',
            detail: error instanceof Error ? error.message : JSON.stringify(error),
          }),
        complete: () => {},
      },
    );
  }
}

function main(): void {
  const chart = new MinuteChart($<HTMLCanvasElement>('#chart'));
  chart.draw();
  setInterval(() => chart.draw(), 30_000);
  $<HTMLSelectElement>('#role').addEventListener('change', (event) => {
    const role = (event.target as HTMLSelectElement).value;
    $<HTMLInputElement>('#login').value = role === 'aggregator' ? 'demo_aggregator' : 'demo.user';
  });
  $<HTMLFormElement>('#login-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const role = $<HTMLSelectElement>('#role').value;
    // The page's own select, but its value is whatever the DOM holds: only a known role logs in.
    if (role !== 'aggregator' && role !== 'user') return;
    $('#status').textContent = 'Logging in…';
    logIn(role, $<HTMLInputElement>('#login').value, $<HTMLInputElement>('#password').value)
      .then((credentials) => connect(credentials, chart))
      .catch((error: unknown) => ($('#status').textContent = `Login failed: ${(error as Error).message}`));
  });
}

main();

// The dashboard: logs in over the gateway's own GraphQL, reads the state of its role through
// queries, then keeps it current with each event of its subscriptions over graphql-ws, resuming
// them after a reconnect from the last position received (web/resume.ts). What an event changes
// is decided in web/state.ts; this file reads, renders and wires.
import { createClient, type Client } from 'graphql-ws';
import { DASHBOARD_DOCUMENTS as D } from './operations.js';
import { ResumableSubscription, ResumeState, type NextPayload } from './resume.js';
import {
  achRows,
  AuthorizationTally,
  FailingDeliveries,
  LinkStatusCounts,
  type AchReport,
  type AuthorizationFigures,
  type AuthorizationRow,
  type DeliveryRow,
} from './state.js';

type Role = 'aggregator' | 'user';
type Data = Record<string, unknown>;

interface Card {
  SvcCardId: string;
  SvcAccountId?: string;
  name: string | null;
  lastFour: string;
  status: string;
}
interface TransactionRow {
  transactionId: string;
  SvcCardId: string | null;
  narrative: string | null;
  amount: string;
  currency: string;
  credit: string;
  debit: string;
  dtsValue: string;
  isPending: boolean;
}
interface AccountRow {
  SvcAccountId: string;
  name: string | null;
  balance: string;
  availableBalance: string;
  currency: string;
  transactions: { edges: Array<{ node: TransactionRow }> };
}
interface LinkEvent {
  svcTransactionId: string;
  status: string;
  amount: string;
  currency: string;
  payerName: string | null;
  merchant: { name: string } | null;
  statusChangeHistory: Array<{ status: string; dtsCreatedAt: string }>;
}
interface DeliveryEvent {
  deliveryId: string;
  kind: string;
  eventType: string;
  to: string;
  status: string;
  lastError: string | null;
  svcMerchantId: string;
  attempts: Array<{ number: number; outcome: string; httpStatus: number | null }>;
}

/** What the state queries read for each role, kept current by the events. */
type Model =
  | {
      role: 'aggregator';
      tally: AuthorizationTally;
      links: LinkStatusCounts;
      ach: { report: (AchReport & { maxDate: string }) | null };
      failing: FailingDeliveries;
      disabled: Array<{ name: string; since: string }>;
    }
  | { role: 'user'; tally: AuthorizationTally; cards: Card[]; accounts: AccountRow[] };

/** One row of the event list. */
interface Entry {
  key: string;
  at: Date;
  kind: Kind;
  card: string | null;
  title: string;
  detail: string;
  declined?: boolean;
  /** The log position of the event that listed it; none for a row of the state read through the queries. */
  position?: string | null;
}

const KINDS = {
  authorization: 'Authorizations',
  card: 'Card status',
  'payment-link': 'Payment links',
  ach: 'ACH payments',
  kyc: 'KYC applications',
  webhook: 'Deliveries',
  error: 'Errors',
} as const;
type Kind = keyof typeof KINDS;
const ROLE_KINDS: Record<Role, readonly Kind[]> = {
  aggregator: ['authorization', 'payment-link', 'ach', 'kyc', 'webhook', 'error'],
  user: ['authorization', 'card', 'error'],
};
const DAY_MS = 24 * 60 * 60 * 1000;
/** The 24-hour window slides: the state is read again this often. */
const STATE_REFRESH_MS = 15 * 60 * 1000;
const MAX_ENTRIES = 200;

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the element type its selector finds, as with querySelector<E>.
const $ = <T extends HTMLElement>(selector: string) => document.querySelector(selector) as T;

function element<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

/** Fills a table body with rows of cells (text only); `empty` stands in a single cell when there are none. */
function fillTable(tbody: HTMLElement, rows: ReadonlyArray<ReadonlyArray<string | HTMLTableCellElement>>, empty: string): void {
  const columns = tbody.closest('table')?.querySelectorAll('thead th').length ?? 1;
  tbody.replaceChildren(
    ...(rows.length
      ? rows.map((cells) => {
          const tr = element('tr');
          for (const cell of cells) tr.append(typeof cell === 'string' ? element('td', cell) : cell);
          return tr;
        })
      : [
          (() => {
            const tr = element('tr');
            const td = element('td', empty, 'empty');
            td.colSpan = columns;
            tr.append(td);
            return tr;
          })(),
        ]),
  );
}

const numberCell = (text: string, className = '') => element('td', text, `number ${className}`.trim());
const percent = (value: number | null) => (value === null ? '–' : `${value.toFixed(2)} %`);
const cardLabel = (card: { name: string | null; lastFour: string }) => `${card.name ?? 'Card'} …${card.lastFour}`;

async function graphql<T>(query: string, variables: Data, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: T; errors?: Array<{ message: string }> };
  if (body.errors?.length) throw new Error(body.errors[0]!.message);
  return body.data!;
}

async function logIn(role: Role, login: string, password: string): Promise<Record<string, string>> {
  if (role === 'aggregator') {
    const data = await graphql<{ aggregatorGetToken: { token: string } }>(D.aggregatorLogin, { input: { login, password } });
    return { 'x-svc-token': data.aggregatorGetToken.token };
  }
  const data = await graphql<{ login: { token: string } }>(D.userLogin, { input: { channel: 'internet', userName: login, password } });
  return { token: data.login.token };
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

  clear(): void {
    this.buckets.clear();
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
      context.fillStyle = '#2f855a';
      context.fillRect(i * slot + 4, height - 16 - approvedHeight, slot - 8, approvedHeight);
      context.fillStyle = '#c53030';
      context.fillRect(i * slot + 4, height - 16 - approvedHeight - declinedHeight, slot - 8, declinedHeight);
      context.fillStyle = '#4a5568';
      context.font = '10px system-ui';
      context.textAlign = 'center';
      if (i % 3 === 1) context.fillText(new Date(minute * 60_000).toISOString().slice(11, 16), (i + 0.5) * slot, height - 3);
    });
    this.canvas.dataset.approved = String([...this.buckets.values()].reduce((s, b) => s + b.approved, 0));
    this.canvas.dataset.declined = String([...this.buckets.values()].reduce((s, b) => s + b.declined, 0));
  }
}

/** The event list, newest first, with the filters applied. */
class Feed {
  private entries: Entry[] = [];
  private readonly keys = new Set<string>();
  private kinds = new Set<Kind>();
  private card = '';

  /** Adds an entry unless one with its key is listed; true when added. */
  add(entry: Entry): boolean {
    if (this.keys.has(entry.key)) return false;
    this.keys.add(entry.key);
    // In front, and the sort is stable: of entries of the same millisecond (a burst of events, a catch-up), the last added shows first.
    this.entries.unshift(entry);
    this.entries.sort((a, b) => b.at.getTime() - a.at.getTime());
    for (const dropped of this.entries.splice(MAX_ENTRIES)) this.keys.delete(dropped.key);
    this.render();
    return true;
  }

  clear(): void {
    this.entries = [];
    this.keys.clear();
    this.render();
  }

  filter(kinds: Set<Kind>, card: string): void {
    this.kinds = kinds;
    this.card = card;
    this.render();
  }

  private render(): void {
    const list = $('#events');
    let shown = 0;
    list.replaceChildren(
      ...this.entries.map((entry) => {
        const item = element('li', undefined, `event ${entry.kind}${entry.declined ? ' declined' : ''}`);
        item.dataset.kind = entry.kind;
        if (entry.card) item.dataset.card = entry.card;
        if (entry.position) item.dataset.position = entry.position;
        const time = element('time', entry.at.toLocaleTimeString());
        time.dateTime = entry.at.toISOString();
        item.append(time, element('strong', entry.title), element('small', entry.detail));
        item.hidden = !this.kinds.has(entry.kind) || (this.card !== '' && entry.card !== this.card);
        if (!item.hidden) shown += 1;
        return item;
      }),
    );
    $('#events-empty').hidden = shown > 0;
  }
}

function authorizationEntry(a: AuthorizationRow, position: string | null = null): Entry {
  const card = a.card ? ` on ${cardLabel(a.card)}` : ` on ${a.SvcCardId}`;
  return {
    key: `authorization:${a.messageId}`,
    at: new Date(a.dtsReceived),
    kind: 'authorization',
    card: a.SvcCardId,
    title: `${a.messageType} ${a.amount} ${a.currency}${card}: ${a.approved ? 'approved' : `declined (${a.responseCode})`}`,
    detail: `${a.messageId} · ${a.reason}`,
    declined: !a.approved,
    position,
  };
}

/** A signed-in dashboard: its credentials, its state, its subscriptions. */
class Session {
  private model: Model | null = null;
  /** Events that arrived while the state was being read: applied once it is. */
  private buffered: Array<{ name: string; data: Data; position: string | null }> | null = [];
  private reading = false;
  private queued: 'refresh' | 'resume' | 'open' | null = null;
  private readError: string | null = null;
  private readonly client: Client;
  private readonly subscriptions: ResumableSubscription[];
  private readonly resume: ResumeState;
  private readonly timers: Array<ReturnType<typeof setInterval>> = [];
  private readonly refreshes = new Map<string, ReturnType<typeof setTimeout>>();
  private stopped: string | null = null;
  /** Set once another login replaced it: what it still had in flight changes nothing on the page. */
  private disposed = false;
  private eventCount = 0;

  constructor(
    readonly role: Role,
    private readonly headers: Record<string, string>,
    private readonly feed: Feed,
    private readonly chart: MinuteChart,
  ) {
    const routes: Array<[string, string]> =
      role === 'user'
        ? [
            ['cardAuthorizations', D.userCardAuthorizations],
            ['cardStatusChanged', D.userCardStatusChanged],
          ]
        : [
            ['cardAuthorizations', D.aggregatorCardAuthorizations],
            ['paymentLinkStatusChanged', D.paymentLinkStatusChanged],
            ['achPaymentUpdated', D.achPaymentUpdated],
            ['kycApplicationCompleted', D.kycApplicationCompleted],
            ['webhookDeliveryAttempted', D.webhookDeliveryAttempted],
          ];
    this.subscriptions = routes.map(([name, query]) => new ResumableSubscription(name, query));
    this.resume = new ResumeState(this.subscriptions);
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
    this.client = createClient({
      url,
      connectionParams: headers,
      retryAttempts: 30,
      // graphql-ws retries a close but, by default, not the socket's error event, and a browser
      // reports a refused connection (nothing listens while a gateway restarts) as an error before
      // its close: every subscription would end. Both are the socket's events; the client's own
      // errors are not retried, and graphql-ws refuses the close codes it holds fatal (4401,
      // 4429...) before asking.
      shouldRetry: (error) => error instanceof Event,
      retryWait: (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(1000 * 2 ** retries, 10_000) + Math.random() * 500)),
    });
    this.client.on('connected', () => {
      // graphql-ws sends every live subscription again right after this: resume() sets their `after` first.
      if (this.resume.connected(Date.now()).reload) this.read('resume');
      this.showStatus();
    });
    this.client.on('closed', () => {
      this.resume.closed();
      this.showStatus();
    });
  }

  start(): void {
    // Subscribed before the state is read: what happens meanwhile is applied on top of it, not lost.
    for (const subscription of this.subscriptions) this.subscribe(subscription);
    this.read('open');
    this.timers.push(
      setInterval(() => this.read('refresh'), STATE_REFRESH_MS),
      setInterval(() => {
        if (this.resume.catchUpOverdue(Date.now())) this.read('resume');
        this.showStatus();
      }, 1000),
    );
    this.showStatus();
  }

  stop(): void {
    this.disposed = true;
    for (const timer of this.timers) clearInterval(timer);
    for (const timer of this.refreshes.values()) clearTimeout(timer);
    void this.client.dispose();
  }

  private subscribe(subscription: ResumableSubscription): void {
    this.client.subscribe<Data>(subscription.payload, {
      next: (result) => {
        const received = subscription.receive(result as NextPayload);
        switch (received.kind) {
          case 'event':
            if (received.resumeFailed) this.read('resume');
            this.receive(subscription.name, received.data, received.position);
            break;
          case 'caught-up':
            this.resume.caughtUpWith(received.replayed);
            break;
          case 'errors':
            this.error(subscription.name, received.errors[0]?.message ?? 'error');
            break;
          case 'ignore':
            break;
        }
        this.showStatus();
      },
      error: (error) => {
        if (subscription.end(error) === 'expired') {
          // The log no longer holds what was missed: read the state again and subscribe afresh.
          subscription.restart();
          this.subscribe(subscription);
          this.read('resume');
        } else {
          this.error(subscription.name, `Subscription ended: ${describeError(error)}`);
          if (this.subscriptions.every((s) => s.isEnded)) this.stopped = 'Disconnected: log in again.';
        }
        this.showStatus();
      },
      complete: () => {
        subscription.end(null);
      },
    });
  }

  private showStatus(): void {
    if (this.disposed) return;
    const status = $('#status');
    const reading = !this.model && this.resume.phase() === 'live';
    const phase = this.stopped ? 'stopped' : reading ? 'reading' : this.resume.phase();
    let text = this.stopped ?? (reading ? 'Reading the state…' : this.resume.text());
    if (reading && this.readError) text = `Live · the state could not be read: ${this.readError}`;
    if (status.textContent !== text) status.textContent = text;
    status.dataset.phase = phase;
  }

  /**
   * Reads the state through the queries, then applies what arrived meanwhile: on opening, every
   * few minutes as the 24-hour window slides, and to resume where the events cannot say what was
   * missed. One read at a time; one asked for meanwhile follows it.
   */
  private read(reason: 'open' | 'refresh' | 'resume'): void {
    if (this.reading) {
      if (reason === 'resume' || !this.queued) this.queued = reason;
      return;
    }
    this.reading = true;
    this.buffered ??= [];
    this.showStatus();
    void this.readOnce(reason).finally(() => {
      this.reading = false;
      const next = this.queued;
      this.queued = null;
      if (next) this.read(next);
      else this.showStatus();
    });
  }

  private async readOnce(reason: 'open' | 'refresh' | 'resume'): Promise<void> {
    const since = new Date(Date.now() - DAY_MS).toISOString();
    try {
      const model = this.role === 'aggregator' ? await this.readAggregator(since) : await this.readUser(since);
      if (this.disposed) return;
      this.model = model;
      this.readError = null;
    } catch (error) {
      this.readError = (error as Error).message;
      this.error('state', `The state could not be read: ${this.readError}`);
    }
    const pending = this.buffered ?? [];
    this.buffered = null;
    for (const { name, data, position } of pending) this.apply(name, data, false, position);
    this.render();
    if (reason === 'resume') this.resume.stateReloaded();
  }

  private async readAggregator(since: string): Promise<Model> {
    const data = await graphql<{
      cardAuthorizationSummary: AuthorizationFigures;
      cardAuthorizationsConnection: { edges: Array<{ node: AuthorizationRow }> };
      paymentLinkStatusCounts: { asOf: string; statuses: Array<{ status: string; count: number }> };
      achReturnRatesConnection: { edges: Array<{ node: { returnRates: AchReport & { maxDate: string } } }> };
      failedDeliveries: { items: Array<Omit<DeliveryRow, 'source'>> };
      pausedDeliveries: { items: Array<Omit<DeliveryRow, 'source'>> };
      failedAdvices: { items: Array<Omit<DeliveryRow, 'source' | 'kind' | 'svcMerchantId'>> };
      pausedAdvices: { items: Array<Omit<DeliveryRow, 'source' | 'kind' | 'svcMerchantId'>> };
      merchants: Array<{ svcMerchantId: string; name: string; dtsWebhookDisabled: string | null }>;
    }>(D.aggregatorState, { since }, this.headers);
    this.addRows(data.cardAuthorizationsConnection.edges.map((edge) => edge.node));
    return {
      role: 'aggregator',
      tally: new AuthorizationTally(data.cardAuthorizationSummary),
      links: new LinkStatusCounts(data.paymentLinkStatusCounts),
      ach: { report: data.achReturnRatesConnection.edges[0]?.node.returnRates ?? null },
      failing: new FailingDeliveries([
        ...[...data.failedDeliveries.items, ...data.pausedDeliveries.items].map((d) => ({ ...d, source: 'merchant' as const })),
        ...[...data.failedAdvices.items, ...data.pausedAdvices.items].map((d) => ({
          ...d,
          source: 'card' as const,
          kind: 'webhook',
          svcMerchantId: null,
        })),
      ]),
      disabled: data.merchants.flatMap((m) => (m.dtsWebhookDisabled ? [{ name: m.name, since: m.dtsWebhookDisabled }] : [])),
    };
  }

  private async readUser(since: string): Promise<Model> {
    const data = await graphql<{
      me: { cards: Card[] | null; accounts: AccountRow[] | null };
      cardAuthorizationSummary: AuthorizationFigures;
      cardAuthorizationsConnection: { edges: Array<{ node: AuthorizationRow }> };
    }>(D.userState, { since }, this.headers);
    const cards = data.me.cards ?? [];
    if (!this.disposed) setCardOptions(cards.map((card) => ({ value: card.SvcCardId, label: cardLabel(card) })));
    this.addRows(data.cardAuthorizationsConnection.edges.map((edge) => edge.node));
    return { role: 'user', tally: new AuthorizationTally(data.cardAuthorizationSummary), cards, accounts: data.me.accounts ?? [] };
  }

  /** The messages of the window's first page, in the event list (and the chart) as if they had just arrived. */
  private addRows(rows: AuthorizationRow[]): void {
    if (this.disposed) return;
    for (const row of [...rows].reverse()) {
      if (this.feed.add(authorizationEntry(row))) this.chart.add(new Date(row.dtsReceived), !row.approved);
      if (this.role === 'aggregator') addCardOption(row.SvcCardId, row.SvcCardId);
    }
  }

  private receive(name: string, data: Data, position: string | null): void {
    if (this.disposed) return;
    this.eventCount += 1;
    $('#events').dataset.received = String(this.eventCount);
    if (this.buffered) this.buffered.push({ name, data, position });
    else {
      this.apply(name, data, true, position);
      this.render();
    }
  }

  /** Applies one event to the state and the event list; `live` when it arrived after the state was read. */
  private apply(name: string, data: Data, live: boolean, position: string | null): void {
    const model = this.model;
    const now = new Date();
    switch (name) {
      case 'cardAuthorizations': {
        const message = data.cardAuthorizations as AuthorizationRow & {
          card?: {
            name: string | null;
            lastFour: string;
            account?: { SvcAccountId: string; balance: string; availableBalance: string };
          } | null;
        };
        model?.tally.apply(message);
        if (this.feed.add(authorizationEntry(message, position))) this.chart.add(new Date(message.dtsReceived), !message.approved);
        if (this.role === 'aggregator') addCardOption(message.SvcCardId, message.SvcCardId);
        if (model?.role === 'user') {
          const account = message.card?.account;
          const held = account && model.accounts.find((a) => a.SvcAccountId === account.SvcAccountId);
          // Read when the event was resolved; one that waited while the state was read may be older than it.
          if (held && live) Object.assign(held, { balance: account.balance, availableBalance: account.availableBalance });
          // Payments records a message's transaction after the decision: read the accounts a moment later.
          this.refreshSoon('accounts', 1500, async () => {
            const fresh = await graphql<{ me: { accounts: AccountRow[] | null } }>(D.userAccounts, {}, this.headers);
            if (this.model?.role === 'user') this.model.accounts = fresh.me.accounts ?? [];
          });
        }
        return;
      }
      case 'cardStatusChanged': {
        const card = data.cardStatusChanged as Card;
        if (model?.role === 'user') {
          const held = model.cards.find((c) => c.SvcCardId === card.SvcCardId);
          if (held) held.status = card.status;
        }
        this.feed.add({
          key: `card:${card.SvcCardId}:${this.eventCount}`,
          at: now,
          kind: 'card',
          card: card.SvcCardId,
          title: `Card ${cardLabel(card)} is ${card.status}`,
          detail: card.SvcCardId,
          position,
        });
        return;
      }
      case 'paymentLinkStatusChanged': {
        const link = data.paymentLinkStatusChanged as LinkEvent;
        if (model?.role === 'aggregator') model.links.apply(link);
        const changed = link.statusChangeHistory.at(-1)?.dtsCreatedAt;
        this.feed.add({
          key: `link:${link.svcTransactionId}:${link.status}`,
          at: changed ? new Date(changed) : now,
          kind: 'payment-link',
          card: null,
          title: `${link.merchant?.name ?? 'Link'}: ${link.amount} ${link.currency} is ${link.status}`,
          detail: `${link.svcTransactionId}${link.payerName ? ` · ${link.payerName}` : ''}`,
          position,
        });
        return;
      }
      case 'achPaymentUpdated': {
        const ach = data.achPaymentUpdated as { svcTransactionId: string; status: string; returnCode: string | null; amount: string };
        this.feed.add({
          key: `ach:${ach.svcTransactionId}:${ach.status}`,
          at: now,
          kind: 'ach',
          card: null,
          title: `ACH ${ach.amount} USD is ${ach.status}${ach.returnCode ? ` (${ach.returnCode})` : ''}`,
          detail: ach.svcTransactionId,
          position,
        });
        // A return changes the rates, which compliance computes: read the latest report again.
        this.refreshSoon('ach', 2000, async () => {
          const fresh = await graphql<{
            achReturnRatesConnection: { edges: Array<{ node: { returnRates: AchReport & { maxDate: string } } }> };
          }>(D.aggregatorAchReport, {}, this.headers);
          if (this.model?.role === 'aggregator') this.model.ach.report = fresh.achReturnRatesConnection.edges[0]?.node.returnRates ?? null;
        });
        return;
      }
      case 'kycApplicationCompleted': {
        const application = data.kycApplicationCompleted as { applicationId: string; customerId: string; outcome: string | null };
        this.feed.add({
          key: `kyc:${application.applicationId}`,
          at: now,
          kind: 'kyc',
          card: null,
          title: `Application of ${application.customerId} completed: ${application.outcome ?? 'no outcome'}`,
          detail: application.applicationId,
          position,
        });
        return;
      }
      case 'webhookDeliveryAttempted': {
        const delivery = data.webhookDeliveryAttempted as DeliveryEvent;
        if (model?.role === 'aggregator') model.failing.apply({ ...delivery, source: 'merchant' });
        const last = delivery.attempts.at(-1);
        this.feed.add({
          key: `webhook:${delivery.deliveryId}:${last?.number ?? 0}`,
          at: now,
          kind: 'webhook',
          card: null,
          title: `${delivery.eventType} attempt ${last?.number ?? '?'}: ${last?.outcome ?? delivery.status}${last?.httpStatus ? ` (${last.httpStatus})` : ''}`,
          detail: delivery.deliveryId,
          position,
        });
        return;
      }
    }
  }

  /** Runs `read` once, `delayMs` after the last of a burst of events asked for it, then renders. */
  private refreshSoon(name: string, delayMs: number, read: () => Promise<void>): void {
    clearTimeout(this.refreshes.get(name));
    this.refreshes.set(
      name,
      setTimeout(() => {
        this.refreshes.delete(name);
        read()
          .then(() => this.render())
          .catch((error: unknown) => this.error('state', `Could not read again: ${(error as Error).message}`));
      }, delayMs),
    );
  }

  private error(name: string, message: string): void {
    this.feed.add({ key: `error:${Date.now()}:${Math.random()}`, at: new Date(), kind: 'error', card: null, title: message, detail: name });
  }

  private render(): void {
    const model = this.model;
    if (!model || this.disposed) return;
    const { tally } = model;
    $('#auth-total').textContent = String(tally.total);
    $('#auth-approved').textContent = String(tally.approved);
    $('#auth-declined').textContent = String(tally.declined);
    $('#auth-rate').textContent = percent(tally.approvalRate);
    fillTable(
      $('#decline-reasons tbody'),
      tally.declineReasons.map((r) => [r.responseCode, r.decidedBy, r.reason, numberCell(String(r.count))]),
      'No declines.',
    );
    if (model.role === 'aggregator') {
      fillTable(
        $('#link-statuses tbody'),
        model.links.statuses.map((s) => [s.status, numberCell(String(s.count))]),
        'No links.',
      );
      $('#links-total').textContent = String(model.links.total);
      const report = model.ach.report;
      $('#ach-report').textContent = report ? `Report of ${report.maxDate} (the 60 days before it)` : 'No report yet';
      fillTable(
        $('#ach-rates tbody'),
        report
          ? achRows(report).map((row) => [
              row.label,
              numberCell(percent(row.rate)),
              numberCell(`${row.threshold} %`),
              element('td', row.over ? 'Over' : 'Within', row.over ? 'over' : 'within'),
              numberCell(String(row.daysOver), row.daysOver > 0 ? 'over' : ''),
            ])
          : [],
        'No report.',
      );
      fillTable(
        $('#failing-deliveries tbody'),
        model.failing.list.map((d) => [
          element('td', `${d.source === 'card' ? 'Card advice' : `Merchant ${d.svcMerchantId ?? ''}, ${d.kind}`}: ${d.eventType}`, 'long'),
          d.status,
          element('td', d.to, 'long'),
          element('td', d.lastError ?? '', 'long'),
        ]),
        'No delivery failing.',
      );
      $('#disabled-endpoints').textContent = model.disabled.length
        ? `Disabled endpoints: ${model.disabled.map((m) => `${m.name} (since ${new Date(m.since).toLocaleString()})`).join(', ')}. Paused deliveries wait for them to be enabled again.`
        : 'No merchant endpoint is disabled. A card advice paused means the card webhook is disabled.';
    } else {
      fillTable(
        $('#cards tbody'),
        model.cards.map((card) => {
          const status = element('td', card.status, card.status === 'active' ? 'approved-text' : 'declined-text');
          return [card.name ?? card.SvcCardId, `…${card.lastFour}`, status];
        }),
        'No cards.',
      );
      fillTable(
        $('#accounts tbody'),
        model.accounts.map((a) => [
          a.name ?? a.SvcAccountId,
          numberCell(`${a.balance} ${a.currency}`),
          numberCell(`${a.availableBalance} ${a.currency}`),
        ]),
        'No accounts.',
      );
      const card = $<HTMLSelectElement>('#card-filter').value;
      const transactions = model.accounts
        .flatMap((a) => a.transactions.edges.map((edge) => edge.node))
        .sort((a, b) => Date.parse(b.dtsValue) - Date.parse(a.dtsValue));
      const tbody = $('#transactions tbody');
      fillTable(
        tbody,
        transactions.map((t) => [
          new Date(t.dtsValue).toLocaleDateString(),
          `${t.narrative ?? ''}${t.isPending ? ' (pending)' : ''}`,
          numberCell(Number(t.debit) > 0 ? `−${t.debit} ${t.currency}` : `+${t.credit} ${t.currency}`),
        ]),
        'No transactions.',
      );
      transactions.forEach((t, i) => {
        const row = tbody.children[i] as HTMLElement | undefined;
        if (!row) return;
        if (t.SvcCardId) row.dataset.card = t.SvcCardId;
        row.hidden = card !== '' && t.SvcCardId !== card;
      });
    }
  }
}

/** A subscription's end in words: the GraphQL errors graphql-ws hands over, or the socket's close. */
function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  const first: unknown = Array.isArray(error) ? error[0] : error;
  if (typeof first === 'object' && first !== null) {
    const { message, code } = first as { message?: unknown; code?: unknown };
    if (typeof message === 'string') return message;
    if (typeof code === 'number') return `the connection closed (${code})`;
  }
  return 'the connection closed';
}

function setCardOptions(options: Array<{ value: string; label: string }>): void {
  const select = $<HTMLSelectElement>('#card-filter');
  const chosen = select.value;
  select.replaceChildren(element('option', 'All cards'));
  (select.firstChild as HTMLOptionElement).value = '';
  for (const { value, label } of options) addCardOption(value, label);
  select.value = options.some((o) => o.value === chosen) ? chosen : '';
}

function addCardOption(value: string, label: string): void {
  const select = $<HTMLSelectElement>('#card-filter');
  if ([...select.options].some((option) => option.value === value)) return;
  const option = element('option', label);
  option.value = value;
  select.append(option);
}

function main(): void {
  const chart = new MinuteChart($<HTMLCanvasElement>('#chart'));
  chart.draw();
  setInterval(() => chart.draw(), 30_000);
  const feed = new Feed();
  let session: Session | null = null;

  const applyFilters = () => {
    const kinds = new Set<Kind>();
    for (const box of document.querySelectorAll<HTMLInputElement>('#kind-filter input')) if (box.checked) kinds.add(box.value as Kind);
    feed.filter(kinds, $<HTMLSelectElement>('#card-filter').value);
    const card = $<HTMLSelectElement>('#card-filter').value;
    for (const row of document.querySelectorAll<HTMLElement>('#transactions tbody tr'))
      if (!row.querySelector('.empty')) row.hidden = card !== '' && row.dataset.card !== card;
  };
  $('#kind-filter').addEventListener('change', applyFilters);
  $('#card-filter').addEventListener('change', applyFilters);

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
      .then((headers) => {
        session?.stop();
        feed.clear();
        chart.clear();
        setCardOptions([]);
        const fieldset = $('#kind-filter');
        fieldset.replaceChildren(element('legend', 'Kinds of event shown'));
        for (const kind of ROLE_KINDS[role]) {
          const label = element('label');
          const box = element('input');
          box.type = 'checkbox';
          box.name = 'kind';
          box.value = kind;
          box.checked = true;
          label.append(box, ` ${KINDS[kind]}`);
          fieldset.append(label);
        }
        for (const panel of document.querySelectorAll<HTMLElement>('.panel[data-role]')) panel.hidden = panel.dataset.role !== role;
        $('#who').textContent =
          `Signed in as ${role === 'aggregator' ? 'the aggregator' : 'the end user'} ${$<HTMLInputElement>('#login').value}.`;
        $('#main').hidden = false;
        applyFilters();
        session = new Session(role, headers, feed, chart);
        session.start();
      })
      .catch((error: unknown) => {
        $('#status').textContent = `Login failed: ${(error as Error).message}`;
        $('#status').dataset.phase = 'signed out';
      });
  });
}

main();

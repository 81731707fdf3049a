import type { Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, required } from '../../../../platform/security/validate.js';
import { deliverWebhook } from '../../../../platform/messaging/webhooks.js';
import { toMinor } from '../../../../platform/money/money.js';
import { replyCode, webhookPayload } from '../authorization/aggregator.js';
import type { MessageType } from '../authorization/check.js';
import { cardsCollection } from '../cards/datasource.js';
import { webhookConfigsCollection } from '../webhooks/datasource.js';

interface SandboxCase {
  id: string;
  name: string;
  messageType: MessageType;
  actionType: 'request' | 'advice';
  /** In USD. */
  amount: string;
  /** responseCode: any valid code passes; decline: a code other than 00; ack: a 2xx reply. */
  expect: 'responseCode' | 'decline' | 'ack';
  deadlineMs?: number;
}

/** The sandbox catalogue: test and case ids like t002_01 (test 2, case 1). */
const SANDBOX_CASES: readonly SandboxCase[] = [
  {
    id: 't001_01',
    name: '0100 authorization request',
    messageType: '0100',
    actionType: 'request',
    amount: '25.50',
    expect: 'responseCode',
  },
  {
    id: 't001_02',
    name: '0100 authorization request the aggregator should decline',
    messageType: '0100',
    actionType: 'request',
    amount: '9999.99',
    expect: 'decline',
  },
  { id: 't002_01', name: '0200 financial request', messageType: '0200', actionType: 'request', amount: '42.00', expect: 'responseCode' },
  { id: 't003_01', name: '0220 advice', messageType: '0220', actionType: 'advice', amount: '18.20', expect: 'ack' },
  { id: 't004_01', name: '0420 reversal advice', messageType: '0420', actionType: 'advice', amount: '42.00', expect: 'ack' },
  {
    id: 't005_01',
    name: '0100 authorization request with a 1000 ms deadline (timeout path)',
    messageType: '0100',
    actionType: 'request',
    amount: '12.00',
    expect: 'responseCode',
    deadlineMs: 1000,
  },
];

/** Runs sandbox cases against a test card of the aggregator, one real signed webhook each. */
export async function runSandbox(
  db: Db,
  logger: Logger,
  svcAggregatorId: string,
  input: { svcCardId?: string | null; sandBoxCases?: string[] | null },
  allowInternal: boolean,
) {
  const svcCardId = checkString(required(input.svcCardId, 'svcCardId'), 'svcCardId', ID_RULE)!;
  const wanted = input.sandBoxCases ?? null;
  const cases =
    wanted === null
      ? SANDBOX_CASES
      : wanted.map((id, i) => {
          if (!/^t\d{3}_\d{2}$/.test(id))
            throw appError(ErrorCode.VALIDATION_FAILED, `sandBoxCases[${i}] must look like t002_01.`, { field: `sandBoxCases[${i}]` });
          const found = SANDBOX_CASES.find((c) => c.id === id);
          if (!found)
            throw appError(
              ErrorCode.VALIDATION_FAILED,
              `sandBoxCases[${i}]: no case ${id}; the catalogue has ${SANDBOX_CASES.map((c) => c.id).join(', ')}.`,
              { field: `sandBoxCases[${i}]` },
            );
          return found;
        });
  const card = await cardsCollection(db).findOne({ _id: svcCardId, svcAggregatorId });
  if (!card) throw appError(ErrorCode.NOT_FOUND, `No card ${svcCardId} of this aggregator.`, { field: 'svcCardId' });
  if (!card.isTestCard)
    throw appError(ErrorCode.VALIDATION_FAILED, `Card ${svcCardId} is not a test card: the sandbox runs against test cards only.`, {
      field: 'svcCardId',
    });
  const config = await webhookConfigsCollection(db).findOne({ _id: svcAggregatorId });
  if (!config)
    throw appError(
      ErrorCode.CONFLICT,
      'No webhook URL and default strategy are arranged for this aggregator (configureWebhook, or ask support).',
    );

  const results = [];
  for (const sandboxCase of cases) {
    const stan = String(Math.floor(Math.random() * 1_000_000)).padStart(6, '0');
    const message = {
      messageType: sandboxCase.messageType,
      svcCardId,
      amount: sandboxCase.amount,
      currency: 'USD',
      merchantName: 'Sandbox merchant',
      mcc: '5999',
      stan,
      rrn: newId().slice(0, 12).toUpperCase(),
      originalStan: sandboxCase.messageType === '0420' ? '000001' : null,
    };
    const payload = webhookPayload(
      newId('sbx_'),
      message,
      { messageType: sandboxCase.messageType, actionType: sandboxCase.actionType, amount: toMinor(sandboxCase.amount, 'USD', 'amount') },
      card,
      {
        sandbox: { case: sandboxCase.id, expect: sandboxCase.expect === 'decline' ? 'decline' : undefined },
      },
    );
    const outcome = await deliverWebhook(config, payload, sandboxCase.deadlineMs ?? config.timeoutMs, { allowInternal });
    const code = replyCode(outcome);
    let responseData: { responseCode?: string; error?: { code: string; message: string } };
    let pass: boolean;
    if (sandboxCase.expect === 'ack') {
      const ok = outcome.kind === 'reply' && outcome.status >= 200 && outcome.status < 300;
      responseData = ok ? { responseCode: code ?? '00' } : { error: errorOf(outcome) };
      pass = ok;
    } else if (code) {
      responseData = { responseCode: code };
      pass = sandboxCase.expect === 'decline' ? code !== '00' : true;
    } else {
      responseData = { error: errorOf(outcome) };
      pass = false;
    }
    results.push({
      code: [sandboxCase.id, sandboxCase.id.slice(5)],
      name: sandboxCase.name,
      responseData,
      time: Math.round(outcome.ms),
      pass,
    });
  }
  logger.info('sandbox run', { svcAggregatorId, svcCardId, cases: results.length, passed: results.filter((r) => r.pass).length });
  return results;
}

/** The sandbox's error for a reply without a usable responseCode (the spec: code responseCode). */
function errorOf(outcome: Awaited<ReturnType<typeof deliverWebhook>>): { code: string; message: string } {
  if (outcome.kind === 'timeout')
    return { code: 'responseCode', message: `No response code found: no reply within the deadline (${Math.round(outcome.ms)} ms).` };
  if (outcome.kind === 'unreachable')
    return { code: 'responseCode', message: 'No response code found: the webhook URL could not be reached.' };
  if (outcome.status < 200 || outcome.status >= 300)
    return { code: 'responseCode', message: `No response code found: the webhook answered HTTP ${outcome.status}.` };
  return { code: 'responseCode', message: 'No response code found in the reply (expected {"responseCode": "00"}).' };
}

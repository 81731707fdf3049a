import type { Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { ARN_RULE, checkString, ID_RULE, REFERENCE_RULE } from '../../../../platform/security/validate.js';
import { fundsTransactionsCollection, type FundsTransactionDocument } from './datasource.js';

/**
 * `POST /ibis/financial/retrieve`: the aggregator's funds transaction by exactly one of its ids.
 * None, or more than one, is VALIDATION_FAILED (400) naming the ids sent; an unknown id, or
 * another aggregator's, gives an empty list.
 */
export async function retrieveFunds(
  db: Db,
  svcAggregatorId: string,
  input: { svcFundsId?: string | null; reference?: string | null; arn?: string | null },
): Promise<FundsTransactionDocument[]> {
  const sent = (['svcFundsId', 'reference', 'arn'] as const).filter((key) => input[key] !== undefined && input[key] !== null);
  if (sent.length !== 1) {
    throw appError(
      ErrorCode.VALIDATION_FAILED,
      sent.length === 0
        ? 'Send exactly one of svcFundsId, reference, arn.'
        : `Send exactly one of svcFundsId, reference, arn, not ${sent.join(' and ')}.`,
      { field: sent.length === 0 ? 'svcFundsId' : sent.join(',') },
    );
  }
  const key = sent[0]!;
  const rules = {
    svcFundsId: ID_RULE,
    reference: REFERENCE_RULE,
    arn: ARN_RULE,
  } as const;
  const value = checkString(input[key], key, rules[key])!;
  const field = key === 'svcFundsId' ? '_id' : key;
  return fundsTransactionsCollection(db)
    .find({ [field]: value, svcAggregatorId })
    .sort({ dtsCreatedAt: -1 })
    .limit(100)
    .toArray();
}

/** An end-user error body, as the lockout tests read it. */
export interface ErrorBody {
  success: false;
  error: { code: string; message: string };
}

/** An aggregator envelope, as the lockout tests read it. */
export interface AggregatorBody {
  code: string;
  message?: string;
}

/** What an answer says, in one comparable word: 200, or the status and the error code. */
export const outcome = (answer: { status: number; body: ErrorBody }): string =>
  answer.status === 200 ? '200' : `${answer.status} ${answer.body.error.code}`;

/** The same for the aggregator envelope, whose 401s all say "unauthorized": the message tells a lock. */
export const aggregatorOutcome = (answer: { status: number; body: AggregatorBody }): string =>
  answer.status === 200 ? '200' : `${answer.status} ${answer.body.code}${answer.body.message?.startsWith('Locked') ? ' (locked)' : ''}`;

/** How many times each outcome came, by outcome in order. */
export const counted = (outcomes: string[]): Record<string, number> =>
  Object.fromEntries([...new Set(outcomes)].sort().map((o) => [o, outcomes.filter((x) => x === o).length]));

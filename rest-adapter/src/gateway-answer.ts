import { ApolloServerErrorCode } from '@apollo/server/errors';
import { ErrorCode } from '../../platform/contracts/errors.js';
import type { DecimalAnswers } from './contract/decimal-answers.js';
import type { GatewayAnswer } from './gateway-call.js';
import { inputRefusal, Refusal } from './refusal.js';
import { RouteInputError, statusOfCode, type Route } from './routes/index.js';

/** The field a GraphQL variable-coercion message points at: `... at "input.userName"; ...` gives `userName`. */
function fieldOfCoercionError(message: string): string | undefined {
  const at = /at "([^"]+)"/.exec(message)?.[1];
  return at?.split('.').slice(1).join('.') || undefined;
}

/** The Refusal of an answer that carries GraphQL errors: the first one's code, at the route's status for it. */
function refusalOfErrors(route: Route, answer: GatewayAnswer): Refusal | undefined {
  const first = answer.body.errors?.[0];
  if (!first) return undefined;
  const code = first.extensions?.code ?? ErrorCode.INTERNAL;
  const status = statusOfCode(route, code, answer.status >= 400 ? answer.status : 500);
  // A variable refused while coercing (a wrong type, a custom scalar) names its path in the message.
  const field = first.extensions?.field ?? fieldOfCoercionError(first.message);
  // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- code is the gateway's wire string, which ErrorCode's values are.
  const message = status >= 500 && code === ErrorCode.INTERNAL ? 'Internal server error.' : first.message;
  return new Refusal(
    status,
    // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- code is the gateway's wire string, which Apollo's codes are too.
    { code: code === ApolloServerErrorCode.BAD_USER_INPUT ? ErrorCode.BAD_REQUEST : code, message, field },
    { retryAfterSeconds: first.extensions?.retryAfter },
  );
}

/**
 * The route's success payload from the gateway's answer, its decimals as JSON numbers; throws a
 * Refusal for GraphQL errors and for data the route cannot answer with (say, an object that is not there).
 */
export function payloadOf(route: Route, operation: string, answer: GatewayAnswer, decimals: DecimalAnswers): unknown {
  const refusal = refusalOfErrors(route, answer);
  if (refusal) throw refusal;
  try {
    return route.respond(decimals.toNumbers(operation, answer.body.data ?? {}));
  } catch (error) {
    if (!(error instanceof RouteInputError)) throw error;
    throw inputRefusal(route, error);
  }
}

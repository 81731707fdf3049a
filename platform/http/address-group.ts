import { isIPv6 } from 'node:net';

/**
 * The address a rate limit or a login lockout counts against: an IPv4 address itself, an IPv6 address by its /64 (one
 * subscriber's network: a client given a /64 could otherwise take a fresh address per request).
 */
export function addressGroup(ip: string): string {
  const bare = ip.split('%')[0]!.toLowerCase();
  if (!isIPv6(bare)) return bare;
  // Every spelling to eight numbers: a dotted IPv4 tail is two groups, `::` the zeros it stands for.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(bare);
  const text = dotted
    ? `${bare.slice(0, dotted.index)}${((Number(dotted[1]) << 8) | Number(dotted[2])).toString(16)}:${((Number(dotted[3]) << 8) | Number(dotted[4])).toString(16)}`
    : bare;
  const [head = '', tail = ''] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = text.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  const numbers = groups.map((group) => parseInt(group, 16));
  // An IPv4-mapped address (::ffff:a.b.c.d, however written) is its IPv4 client.
  if (numbers.slice(0, 5).every((n) => n === 0) && numbers[5] === 0xffff) {
    return [numbers[6]! >> 8, numbers[6]! & 255, numbers[7]! >> 8, numbers[7]! & 255].join('.');
  }
  return `${numbers
    .slice(0, 4)
    .map((n) => n.toString(16))
    .join(':')}::/64`;
}

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** A message a test server received: an email over SMTP, or a text through the SMS webhook. */
interface Received {
  to: string;
  text: string;
}

/** A real SMTP server and a real SMS-provider webhook on free loopback ports, collecting what arrives. */
export interface Inbox {
  smtpUrl: string;
  smsWebhookUrl: string;
  emails: Received[];
  texts: Received[];
  /** Waits for the next message to `to` and returns the six-digit code in it. */
  codeFor(to: string, kind: 'email' | 'sms'): Promise<string>;
  close(): Promise<void>;
}

export async function startInbox(): Promise<Inbox> {
  const emails: Received[] = [];
  const texts: Received[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        for (const to of session.envelope.rcptTo) emails.push({ to: to.address, text: raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
  const smtpPort = (smtp.server.address() as AddressInfo).port;
  const sms = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      texts.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Received);
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => sms.listen(0, '127.0.0.1', () => resolve()));
  const smsPort = (sms.address() as AddressInfo).port;

  return {
    smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
    smsWebhookUrl: `http://127.0.0.1:${smsPort}/sms`,
    emails,
    texts,
    async codeFor(to, kind) {
      const box = kind === 'email' ? emails : texts;
      for (let i = 0; i < 100; i += 1) {
        const found = [...box].reverse().find((message) => message.to === to);
        const code = found && / is (\d{6})\b/.exec(found.text)?.[1];
        if (code) {
          box.splice(box.indexOf(found), 1);
          return code;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`no ${kind} with a code reached ${to}`);
    },
    close: async () => {
      await new Promise<void>((resolve) => smtp.close(() => resolve()));
      await new Promise<void>((resolve) => sms.close(() => resolve()));
    },
  };
}

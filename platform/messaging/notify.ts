import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from '../runtime/logger.js';

/** A message to one person: an email, or a text to a phone. */
interface Message {
  to: string;
  subject: string;
  text: string;
}

/** Sends emails and text messages to end users and operators. */
export interface Notifier {
  email(message: Message): Promise<void>;
  sms(message: Omit<Message, 'subject'>): Promise<void>;
}

/** Shows the end of an address or number only, for logs. */
export function maskRecipient(to: string): string {
  const at = to.indexOf('@');
  return at > 0 ? `${to.slice(0, 1)}***${to.slice(at)}` : `***${to.slice(-3)}`;
}

/**
 * Email over SMTP where `smtpUrl` is set (nodemailer), otherwise written as `.eml` files into
 * `outboxDir` for development. Text messages go to an SMS provider's webhook where `smsWebhookUrl`
 * is set (POST `{to, text}`), otherwise to files in the same folder. Message bodies are never logged.
 */
export function createNotifier(options: {
  smtpUrl?: string | undefined;
  mailFrom: string;
  smsWebhookUrl?: string | undefined;
  outboxDir: string;
  logger: Logger;
}): Notifier {
  const { logger } = options;
  const transport: Transporter<unknown> = options.smtpUrl
    ? // A stalled SMTP server must not hold a delivery past its lease (nodemailer's defaults are minutes).
      nodemailer.createTransport({ url: options.smtpUrl, connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 30_000 })
    : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });

  const toFile = async (name: string, content: string | Buffer) => {
    await mkdir(options.outboxDir, { recursive: true });
    const file = path.join(options.outboxDir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${name}`);
    await writeFile(file, content);
    return file;
  };
  return {
    async email(message) {
      const info = (await transport.sendMail({ from: options.mailFrom, to: message.to, subject: message.subject, text: message.text })) as {
        message?: Buffer;
      };
      if (!options.smtpUrl && info.message) await toFile('mail.eml', info.message);
      logger.info('email sent', {
        to: maskRecipient(message.to),
        subject: message.subject,
        via: options.smtpUrl ? 'smtp' : 'outbox folder',
      });
    },
    async sms(message) {
      if (options.smsWebhookUrl) {
        const response = await fetch(options.smsWebhookUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ to: message.to, text: message.text }),
          signal: AbortSignal.timeout(10_000),
        });
        if (!response.ok) throw new Error(`SMS provider answered ${response.status}`);
      } else {
        await toFile('sms.txt', `To: ${message.to}\n\n${message.text}\n`);
      }
      logger.info('text message sent', { to: maskRecipient(message.to), via: options.smsWebhookUrl ? 'webhook' : 'outbox folder' });
    },
  };
}

/**
 * The pino logger: JSON lines on stdout. The Authorization header, the token and the notification
 * secrets (webhook secret, ntfy token, MQTT URL with its password) are redacted wherever a log line
 * carries them under these names; the alert code logs channel URLs only in redacted form.
 */
import pino, { type Logger } from 'pino';

export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'token',
        'API_TOKEN',
        'secret',
        'password',
        'NOTIFY_WEBHOOK_SECRET',
        'NOTIFY_NTFY_TOKEN',
        'MQTT_URL',
      ],
      censor: '[redacted]',
    },
  });
}

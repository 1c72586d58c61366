/** The pino logger: JSON lines on stdout. The Authorization header is redacted wherever it appears. */
import pino, { type Logger } from 'pino';

export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'token', 'API_TOKEN'],
      censor: '[redacted]',
    },
  });
}

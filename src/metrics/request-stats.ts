/**
 * The two per-request series, `netkeep_http_requests_total{method,route,status}` and the histogram
 * `netkeep_http_request_duration_seconds{route}`, kept as plain numbers per route pattern and
 * written as Prometheus text (format 0.0.4) at scrape time.
 *
 * Why not prom-client's Counter and Histogram, as for every other series: they build and hash the
 * label set on every call, and every request made two calls. Here each route holds its own
 * `RouteStats` (handed to the route's hook once, when the route is added), so recording a request
 * is a bucket search and three additions.
 */

/** Upper bounds of the duration buckets, seconds (the last bucket, +Inf, is the count). */
export const durationBuckets = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

const requestsName = 'netkeep_http_requests_total';
const durationName = 'netkeep_http_request_duration_seconds';

/** A label value in the text format: backslash, double quote and newline escaped. */
function labelText(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** The requests of one route pattern. */
export class RouteStats {
  /** Answers by method, then by status code. */
  private readonly answers = new Map<string, Map<number, number>>();
  /** Observations per bucket, not cumulative: `[i]` counts durations in (bound[i-1], bound[i]]. */
  private readonly buckets = new Float64Array(durationBuckets.length);
  private count = 0;
  private sum = 0;

  constructor(readonly route: string) {}

  /** One answered request (`seconds`: how long it took, or how long a stream stayed open). */
  record(method: string, status: number, seconds: number): void {
    let byStatus = this.answers.get(method);
    if (byStatus === undefined) this.answers.set(method, (byStatus = new Map<number, number>()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    // Over the last bound, the request is in +Inf only (the count).
    for (let i = 0; i < durationBuckets.length; i++)
      if (seconds <= (durationBuckets[i] ?? Infinity)) {
        this.buckets[i] = (this.buckets[i] ?? 0) + 1;
        break;
      }
    this.count++;
    this.sum += seconds;
  }

  /** Sample lines of the counter. */
  requestLines(): string[] {
    const route = labelText(this.route);
    const lines: string[] = [];
    for (const [method, byStatus] of this.answers)
      for (const [status, n] of byStatus)
        lines.push(`${requestsName}{method="${labelText(method)}",route="${route}",status="${status}"} ${n}`);
    return lines;
  }

  /** Sample lines of the histogram (cumulative buckets, +Inf, sum, count). */
  durationLines(): string[] {
    if (this.count === 0) return [];
    const route = labelText(this.route);
    let cumulative = 0;
    const lines = durationBuckets.map((bound, i) => {
      cumulative += this.buckets[i] ?? 0;
      return `${durationName}_bucket{le="${bound}",route="${route}"} ${cumulative}`;
    });
    lines.push(`${durationName}_bucket{le="+Inf",route="${route}"} ${this.count}`);
    lines.push(`${durationName}_sum{route="${route}"} ${this.sum}`);
    lines.push(`${durationName}_count{route="${route}"} ${this.count}`);
    return lines;
  }
}

export class RequestStats {
  private readonly routes = new Map<string, RouteStats>();

  /** The stats of a route pattern (`unmatched` for requests no route matched), made on first use. */
  route(pattern: string): RouteStats {
    let stats = this.routes.get(pattern);
    if (stats === undefined) this.routes.set(pattern, (stats = new RouteStats(pattern)));
    return stats;
  }

  /** Both series in the Prometheus text format, each line ending with a newline. */
  text(): string {
    const all = [...this.routes.values()];
    return [
      `# HELP ${requestsName} HTTP requests answered, by method, route pattern and status.`,
      `# TYPE ${requestsName} counter`,
      ...all.flatMap((stats) => stats.requestLines()),
      '',
      `# HELP ${durationName} Time to answer an HTTP request (a stream: how long it was open), by route pattern.`,
      `# TYPE ${durationName} histogram`,
      ...all.flatMap((stats) => stats.durationLines()),
      '',
    ].join('\n');
  }
}

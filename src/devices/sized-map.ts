/**
 * A map bounded by the total size of its values (and optionally by their number), the oldest set
 * dropped first (a Map iterates in insertion order): the memory bound of the device caches
 * (list-cache.ts: item texts and whole answers; view-cache.ts: device texts).
 */
export class SizedMap<K, V> {
  private readonly map = new Map<K, V>();
  private total = 0;

  /**
   * @param sizeOf a value's size (characters or bytes)
   * @param maxSize the total size kept
   * @param maxCount values kept at most, however small
   */
  constructor(
    private readonly sizeOf: (value: V) => number,
    private readonly maxSize: number,
    private readonly maxCount = Infinity,
  ) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  /** Keeps `value`, dropping the oldest values until it fits. */
  set(key: K, value: V): void {
    this.delete(key);
    const size = this.sizeOf(value);
    for (const oldest of this.map.keys()) {
      if (this.total + size <= this.maxSize && this.map.size < this.maxCount) break;
      this.delete(oldest);
    }
    this.map.set(key, value);
    this.total += size;
  }

  delete(key: K): void {
    const value = this.map.get(key);
    if (value === undefined) return;
    this.total -= this.sizeOf(value);
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
    this.total = 0;
  }
}

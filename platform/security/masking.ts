/** Shows only the last four characters of a number: `**** 1234`. */
export function maskLastFour(lastFour: string | null | undefined): string | null {
  return lastFour ? `**** ${lastFour}` : null;
}

/**
 * The false-done rate's windows (server/analytics/false-done.ts; pure, so in constants/: the Dash's
 * table imports it in the browser too): a finish reopened within REOPEN_WINDOW_DAYS counts as
 * false, over the finishes of the last RANGE_DAYS.
 */
export const REOPEN_WINDOW_DAYS = 7;
export const FALSE_DONE_RANGE_DAYS = 30;

/** CSV import (issue 29, decision 047): doors call these; runs are followed with `importStatus`. */
export { previewCsvImport, previewCsvInput, startCsvImport, startCsvInput, dryRunCsvImport, dryRunCsvInput } from "./start.ts";

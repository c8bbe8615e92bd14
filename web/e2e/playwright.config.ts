import { defineConfig } from "@playwright/test";

// Driven by e2e/web_test.go (Go), which starts the real binary and stack and
// passes the URL and keys in the environment. Debian's Chromium, never a
// downloaded browser.
export default defineConfig({
  testDir: ".",
  testMatch: /.*\.spec\.ts$/,
  workers: 1,
  fullyParallel: false,
  // One retry: on a loaded 2-core CI machine a step can miss a timeout; a
  // test that passes only on retry is reported as flaky by e2e/web_test.go.
  retries: 1,
  timeout: 120_000,
  expect: { timeout: 20_000 },
  reporter: [["list"], ["json", { outputFile: process.env.CRITIC_E2E_REPORT ?? "test-results/report.json" }]],
  use: {
    baseURL: process.env.CRITIC_E2E_URL,
    viewport: { width: 1360, height: 860 },
    trace: "off",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.CRITIC_CHROMIUM ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    },
  },
  outputDir: "test-results",
});

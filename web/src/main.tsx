import { StrictMode, Suspense, useCallback, useState } from "react";
import { createRoot } from "react-dom/client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BrowserRouter, Navigate, Outlet, Route, Routes } from "react-router";
import { takeInviteFromFragment, takeKeyFromFragment } from "./api/client";
import { AuthProvider, useAuth } from "./auth/auth";
import { SignIn } from "./signin/SignIn";
import { Layout } from "./shell/Layout";
import { RetryNotice } from "./api/RetryNotice";
import { ChunkBoundary, page } from "./shell/lazyPage";
import { PreloadPages } from "./shell/PreloadPages";
import "./styles.css";

// Every page is its own chunk, so a screen evaluates only its own code; the
// shell (router, query cache, sidebar) is the entry. public/preload.js
// modulepreloads the current route's chunk while the entry loads, and the
// chunk names below are the keys it looks them up by (vite.config.ts).
const TracesPage = page("TracesPage", () => import("./traces/TracesPage"));
const TraceViewer = page("TraceViewer", () => import("./viewer/TraceViewer"));
const ReviewPage = page("ReviewPage", () => import("./review/ReviewPage"));
const ModelsPage = page("ModelsPage", () => import("./models/ModelsPage"));
const ModelDetail = page("ModelDetail", () => import("./models/ModelDetail"));
const ComparePage = page("ComparePage", () => import("./models/ComparePage"));
const SkillsPage = page("SkillsPage", () => import("./skills/SkillsPage"));
const GepaRunPage = page("GepaRunPage", () => import("./skills/GepaRunPage"));
const SqlPage = page("SqlPage", () => import("./sql/SqlPage"));
const ComparisonsPage = page("ComparisonsPage", () => import("./comparisons/ComparisonsPage"));
const CriteriaPage = page("CriteriaPage", () => import("./criteria/CriteriaPage"));
const TeamPage = page("TeamPage", () => import("./team/TeamPage"));

// The entry and everything it imports have been evaluated (make bench-ui
// reports the marks it finds; DevTools shows them in the timing track).
performance.mark("critic:shell-evaluated");

// Before anything renders: a #key=… link signs in and leaves the address bar at once.
takeKeyFromFragment();
// A one-time #invite=… link leaves the address bar too; SignIn spends it.
const invite = takeInviteFromFragment();

const queryClient = new QueryClient({
  defaultOptions: { queries: { retry: (n, e: unknown) => n < 2 && !((e as { status?: number }).status! < 500), refetchOnWindowFocus: false } },
});

function Gate() {
  // The pages render while GET /me is in flight (their data loads in
  // parallel); write controls appear once it says the key may write.
  const { key, error } = useAuth();
  const [pending, setPending] = useState(invite);
  const inviteDone = useCallback(() => setPending(null), []);
  if (pending || !key || error) return <SignIn invite={pending} onInviteDone={inviteDone} />;
  return (
    <Routes>
      <Route
        element={
          <Layout>
            <ChunkBoundary>
              <Suspense fallback={<PageLoading />}>
                <Outlet />
                <PreloadPages />
              </Suspense>
            </ChunkBoundary>
          </Layout>
        }
      >
        <Route index element={<Navigate to="/traces" replace />} />
        <Route path="traces" element={<TracesPage />} />
        <Route path="traces/:id" element={<TraceViewer />} />
        <Route path="review" element={<ReviewPage />} />
        <Route path="models" element={<ModelsPage />} />
        <Route path="models/compare" element={<ComparePage />} />
        <Route path="models/:id" element={<ModelDetail />} />
        <Route path="skills" element={<SkillsPage />} />
        <Route path="skills/:id" element={<GepaRunPage />} />
        <Route path="sql" element={<SqlPage />} />
        <Route path="comparisons" element={<ComparisonsPage />} />
        <Route path="criteria" element={<CriteriaPage />} />
        <Route path="team" element={<TeamPage />} />
        <Route path="*" element={<NotFoundPage />} />
      </Route>
    </Routes>
  );
}

/** What a page shows while its chunk loads (the sidebar is already there). */
function PageLoading() {
  return (
    <main className="main center muted" aria-busy="true">
      Loading…
    </main>
  );
}

function NotFoundPage() {
  return (
    <main className="main">
      <h1>Page not found</h1>
      <p>
        <a href="/traces">Go to Traces</a>
      </p>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <BrowserRouter>
        <AuthProvider>
          <Gate />
          <RetryNotice />
        </AuthProvider>
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);

"""The REST API under /api/. Org-scoped routes live under `orgs/<org-slug>/` (see hangar.api.scoping)."""

from django.urls import include, path

from hangar.api import (
    audit_views,
    auth_views,
    caps_views,
    credential_views,
    env_views,
    environment_views,
    grant_views,
    host_views,
    invitation_views,
    mcp_views,
    member_views,
    org_views,
    pending_views,
    policy_preview_views,
    project_views,
    share_views,
    sso_views,
    token_views,
    usage_views,
)
from hangar.health import HealthView

ORG = "orgs/<slug:org>/"
PROJECT = ORG + "projects/<int:project_id>/"

urlpatterns: list = [
    path("health", HealthView.as_view(), name="health"),
    path("auth/csrf", auth_views.CsrfView.as_view(), name="auth-csrf"),
    path("auth/login", auth_views.LoginView.as_view(), name="auth-login"),
    path("auth/logout", auth_views.LogoutView.as_view(), name="auth-logout"),
    path("me", auth_views.MeView.as_view(), name="me"),
    path("shares/<str:token>", share_views.ShareView.as_view(), name="share-view"),
    path("auth/ws-ticket", auth_views.WsTicketView.as_view(), name="auth-ws-ticket"),
    path("operator/hosts/", host_views.HostListView.as_view(), name="operator-hosts"),
    path("operator/hosts/<str:name>/drain", host_views.HostDrainView.as_view(), name="operator-host-drain"),
    path(
        "operator/hosts/<str:name>/activate",
        host_views.HostActivateView.as_view(),
        name="operator-host-activate",
    ),
    path("auth/sso/start", sso_views.SsoStartView.as_view(), name="sso-start"),
    path("auth/sso/callback", sso_views.SsoCallbackView.as_view(), name="sso-callback"),
    path(ORG + "sso", sso_views.OrgSsoView.as_view(), name="org-sso"),
    path(
        ORG + "sso/domains/<str:domain>/verify",
        sso_views.SsoDomainVerifyView.as_view(),
        name="org-sso-domain-verify",
    ),
    path("orgs/", org_views.OrgListCreateView.as_view(), name="orgs"),
    path(ORG, org_views.OrgDetailView.as_view(), name="org"),
    path(
        ORG + "permission-policy", org_views.OrgPermissionPolicyView.as_view(), name="org-permission-policy"
    ),
    path(ORG + "mcp-policy", org_views.OrgMcpPolicyView.as_view(), name="org-mcp-policy"),
    path(ORG + "me/permission-rules", org_views.MyPermissionRulesView.as_view(), name="my-permission-rules"),
    path(ORG + "instructions", org_views.OrgInstructionsView.as_view(), name="org-instructions"),
    path(ORG + "share-policy", org_views.OrgSharePolicyView.as_view(), name="org-share-policy"),
    path(
        ORG + "permission-preview",
        policy_preview_views.PermissionPreviewView.as_view(),
        name="permission-preview",
    ),
    path(ORG + "pending/", pending_views.OrgPendingView.as_view(), name="org-pending"),
    path(ORG + "members/", member_views.MemberListAddView.as_view(), name="members"),
    path(ORG + "members/<int:member_id>", member_views.MemberDetailView.as_view(), name="member"),
    path(ORG + "invitations/", invitation_views.InvitationListCreateView.as_view(), name="invitations"),
    path(
        ORG + "invitations/<int:invitation_id>",
        invitation_views.InvitationRevokeView.as_view(),
        name="invitation",
    ),
    path("invitations/<str:secret>", invitation_views.InvitationPublicView.as_view(), name="invitation-link"),
    path(
        "invitations/<str:secret>/accept",
        invitation_views.InvitationAcceptView.as_view(),
        name="invitation-accept",
    ),
    path(ORG + "tokens/", token_views.TokenListCreateView.as_view(), name="tokens"),
    path(ORG + "tokens/<int:token_id>", token_views.TokenRevokeView.as_view(), name="token"),
    path(ORG + "projects/", project_views.ProjectListCreateView.as_view(), name="projects"),
    path(PROJECT, project_views.ProjectDetailView.as_view(), name="project"),
    path(PROJECT + "env/", env_views.EnvListView.as_view(), name="project-env"),
    path(PROJECT + "mcp/", mcp_views.McpMemberStatusView.as_view(), name="project-mcp"),
    path(PROJECT + "mcp/<str:name>/auth", mcp_views.McpAuthView.as_view(), name="project-mcp-auth"),
    path("mcp/oauth/callback", mcp_views.McpOAuthCallbackView.as_view(), name="mcp-oauth-callback"),
    path(PROJECT + "env/<str:name>", env_views.EnvDetailView.as_view(), name="project-env-var"),
    path(PROJECT + "env/<str:name>/scope", env_views.EnvScopeView.as_view(), name="project-env-scope"),
    path(
        PROJECT + "environments/",
        environment_views.EnvironmentListView.as_view(),
        name="project-environments",
    ),
    path(
        PROJECT + "environments/<str:key>",
        environment_views.EnvironmentDetailView.as_view(),
        name="project-environment",
    ),
    path(ORG + "credentials/", credential_views.CredentialListSetView.as_view(), name="credentials"),
    path(
        ORG + "credentials/<int:credential_id>",
        credential_views.CredentialDetailView.as_view(),
        name="credential",
    ),
    path(
        PROJECT + "permission-grants/",
        grant_views.PermissionGrantListView.as_view(),
        name="permission-grants",
    ),
    path(
        PROJECT + "permission-grants/<int:grant_id>",
        grant_views.PermissionGrantRevokeView.as_view(),
        name="permission-grant",
    ),
    path(ORG + "usage", usage_views.UsageView.as_view(), name="usage"),
    path(ORG + "usage/export.csv", usage_views.UsageExportView.as_view(), name="usage-export"),
    path(ORG + "budgets/", usage_views.BudgetListSetView.as_view(), name="budgets"),
    path(ORG + "budgets/<int:budget_id>", usage_views.BudgetDetailView.as_view(), name="budget"),
    path(
        ORG + "budgets/<int:budget_id>/override",
        caps_views.BudgetOverrideView.as_view(),
        name="budget-override",
    ),
    path(ORG + "project-caps", caps_views.ProjectCapsView.as_view(), name="project-caps"),
    path(ORG + "model-allowlist", usage_views.ModelAllowListView.as_view(), name="model-allowlist"),
    path(ORG + "audit/", audit_views.AuditListView.as_view(), name="audit"),
    path(ORG + "audit/export.<str:kind>", audit_views.AuditExportView.as_view(), name="audit-export"),
    path(ORG + "audit/retention", audit_views.AuditRetentionView.as_view(), name="audit-retention"),
    path("", include("hangar.api.sessions_urls")),  # sessions, messages, events (realtime engineer)
]

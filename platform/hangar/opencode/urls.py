"""OpenCode's HTTP API under `/oc/<project_id>/` (hangar.urls): the routes the stock `opencode` CLI,
its TUI and `@opencode-ai/sdk` call, with OpenCode's JSON shapes."""

from django.urls import path

from hangar.opencode import (
    views_config,
    views_files,
    views_mcp,
    views_meta,
    views_question,
    views_revert,
    views_session,
    views_share,
    views_shell,
    views_steer,
    views_stream,
)

urlpatterns = [
    path("event", views_stream.event_stream, name="oc-event"),
    path("global/event", views_stream.global_event_stream, name="oc-global-event"),
    path("config", views_config.Config.as_view(), name="oc-config"),
    path("config/providers", views_meta.ConfigProviders.as_view(), name="oc-config-providers"),
    path("provider", views_meta.Providers.as_view(), name="oc-providers"),
    path("agent", views_meta.Agents.as_view(), name="oc-agents"),
    path("path", views_meta.Path.as_view(), name="oc-path"),
    path("project/current", views_meta.ProjectCurrent.as_view(), name="oc-project-current"),
    path(
        "project/<str:opencode_project_id>/directories",
        views_meta.ProjectDirectories.as_view(),
        name="oc-project-directories",
    ),
    path("command", views_meta.Commands.as_view(), name="oc-commands"),
    path("skill", views_meta.Skills.as_view(), name="oc-skills"),
    path("vcs", views_meta.Vcs.as_view(), name="oc-vcs"),
    path("file", views_files.FileList.as_view(), name="oc-file-list"),
    path("file/content", views_files.FileContent.as_view(), name="oc-file-content"),
    path("file/status", views_files.FileStatus.as_view(), name="oc-file-status"),
    path("find", views_files.FindText.as_view(), name="oc-find"),
    path("find/file", views_files.FindFile.as_view(), name="oc-find-file"),
    path("find/symbol", views_files.FindSymbol.as_view(), name="oc-find-symbol"),
    path("lsp", views_meta.Lsp.as_view(), name="oc-lsp"),
    path("formatter", views_meta.Formatter.as_view(), name="oc-formatter"),
    path("mcp", views_mcp.McpStatus.as_view(), name="oc-mcp"),
    path("mcp/<str:name>/connect", views_mcp.McpConnect.as_view(), name="oc-mcp-connect"),
    path("mcp/<str:name>/disconnect", views_mcp.McpDisconnect.as_view(), name="oc-mcp-disconnect"),
    path("mcp/<str:name>/auth", views_mcp.McpAuth.as_view(), name="oc-mcp-auth"),
    path("mcp/<str:name>/auth/callback", views_mcp.McpAuthCallback.as_view(), name="oc-mcp-auth-callback"),
    path(
        "mcp/<str:name>/auth/authenticate",
        views_mcp.McpAuthAuthenticate.as_view(),
        name="oc-mcp-auth-authenticate",
    ),
    path("provider/auth", views_meta.ProviderAuth.as_view(), name="oc-provider-auth"),
    path("experimental/capabilities", views_meta.Capabilities.as_view(), name="oc-capabilities"),
    path("experimental/console", views_meta.ConsoleState.as_view(), name="oc-console"),
    path("experimental/workspace", views_meta.Workspaces.as_view(), name="oc-workspaces"),
    path("experimental/workspace/status", views_meta.WorkspaceStatus.as_view(), name="oc-workspace-status"),
    path("experimental/resource", views_meta.McpResources.as_view(), name="oc-mcp-resources"),
    path("session", views_session.SessionListCreate.as_view(), name="oc-sessions"),
    path("session/status", views_session.SessionStatusList.as_view(), name="oc-session-status"),
    path("session/<str:session_id>", views_session.SessionDetail.as_view(), name="oc-session"),
    path(
        "session/<str:session_id>/children",
        views_session.SessionChildren.as_view(),
        name="oc-session-children",
    ),
    path("session/<str:session_id>/message", views_stream.session_message, name="oc-session-messages"),
    path(
        "session/<str:session_id>/message/<str:message_id>",
        views_session.SessionMessageDetail.as_view(),
        name="oc-session-message",
    ),
    path("session/<str:session_id>/command", views_stream.session_command, name="oc-session-command"),
    path("session/<str:session_id>/todo", views_session.SessionTodos.as_view(), name="oc-session-todo"),
    path("session/<str:session_id>/prompt_async", views_steer.PromptAsync.as_view(), name="oc-prompt-async"),
    path("session/<str:session_id>/abort", views_steer.Abort.as_view(), name="oc-abort"),
    path("session/<str:session_id>/revert", views_revert.Revert.as_view(), name="oc-revert"),
    path("session/<str:session_id>/unrevert", views_revert.Unrevert.as_view(), name="oc-unrevert"),
    path("session/<str:session_id>/fork", views_revert.Fork.as_view(), name="oc-fork"),
    path("session/<str:session_id>/diff", views_revert.Diff.as_view(), name="oc-diff"),
    path("session/<str:session_id>/summarize", views_steer.Summarize.as_view(), name="oc-summarize"),
    path(
        "session/<str:session_id>/permissions/<str:request_id>",
        views_steer.LegacyPermissionRespond.as_view(),
        name="oc-permission-respond",
    ),
    path("permission", views_steer.PermissionList.as_view(), name="oc-permissions"),
    path(
        "permission/<str:request_id>/reply", views_steer.PermissionReply.as_view(), name="oc-permission-reply"
    ),
    path("question", views_question.QuestionList.as_view(), name="oc-questions"),
    path("question/<str:request_id>/reply", views_question.QuestionReply.as_view(), name="oc-question-reply"),
    path(
        "question/<str:request_id>/reject", views_question.QuestionReject.as_view(), name="oc-question-reject"
    ),
]

# The TUI's `!`, `/init`, `/share` and settings writes (views of their own modules).
urlpatterns += [
    path("session/<str:session_id>/shell", views_shell.Shell.as_view(), name="oc-session-shell"),
    path("session/<str:session_id>/init", views_shell.Init.as_view(), name="oc-session-init"),
    path("session/<str:session_id>/share", views_share.Share.as_view(), name="oc-session-share"),
    path("global/config", views_config.GlobalConfig.as_view(), name="oc-global-config"),
]

# --- issue 30, "what OpenCode's own app and the SDK call" (helper `api`): health, history edits, vcs,
# projects, the tool list. Kept in one block of its own.
from hangar.opencode import views_history, views_project, views_pty, views_tools, views_vcs  # noqa: E402

urlpatterns += [
    path("global/health", views_project.Health.as_view(), name="oc-global-health"),
    path("project", views_project.Projects.as_view(), name="oc-projects"),
    path(
        "project/<str:opencode_project_id>",
        views_project.ProjectUpdate.as_view(),
        name="oc-project-update",
    ),
    path(
        "session/<str:session_id>/message/<str:message_id>/part/<str:part_id>",
        views_history.MessagePart.as_view(),
        name="oc-message-part",
    ),
    path("vcs/status", views_vcs.VcsStatus.as_view(), name="oc-vcs-status"),
    path("vcs/diff", views_vcs.VcsDiff.as_view(), name="oc-vcs-diff"),
    path("vcs/diff/raw", views_vcs.VcsDiffRaw.as_view(), name="oc-vcs-diff-raw"),
    path("experimental/tool", views_tools.ToolList.as_view(), name="oc-tool-list"),
    path("experimental/tool/ids", views_tools.ToolIds.as_view(), name="oc-tool-ids"),
    path("pty/shells", views_pty.PtyShells.as_view(), name="oc-pty-shells"),
    path("pty", views_pty.PtyList.as_view(), name="oc-pty-list"),
    path("pty/<str:pty_id>", views_pty.PtyDetail.as_view(), name="oc-pty"),
    path("pty/<str:pty_id>/connect-token", views_pty.PtyConnectToken.as_view(), name="oc-pty-connect-token"),
]

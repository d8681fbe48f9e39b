"""Routes of the sessions API (included from hangar.api.urls)."""

from django.urls import path

from hangar.api import question_views as questions
from hangar.api import session_history_views as history
from hangar.api import session_steer_views as steer
from hangar.api import sessions_views as v
from hangar.api import workspace_views as ws

BASE = "orgs/<slug:org>/projects/<int:project_id>/sessions/"
ONE = BASE + "<str:session_id>/"

urlpatterns = [
    path("orgs/<slug:org>/sessions/recent", v.OrgRecentSessionsView.as_view(), name="sessions-recent"),
    path(BASE, v.SessionCollectionView.as_view(), name="sessions"),
    path(ONE, v.SessionDetailView.as_view(), name="session"),
    path(ONE + "archive/", v.SessionArchiveView.as_view(), name="session-archive"),
    path(ONE + "unarchive/", v.SessionUnarchiveView.as_view(), name="session-unarchive"),
    path(ONE + "children/", v.SessionChildrenView.as_view(), name="session-children"),
    path(ONE + "messages/", v.MessageCollectionView.as_view(), name="session-messages"),
    path(ONE + "messages/<str:message_id>/", v.MessageDetailView.as_view(), name="session-message"),
    path(ONE + "events/", v.EventCollectionView.as_view(), name="session-events"),
    path(ONE + "prompt/", steer.SessionPromptView.as_view(), name="session-prompt"),
    path(ONE + "command/", steer.SessionCommandView.as_view(), name="session-command"),
    path(ONE + "abort/", steer.SessionAbortView.as_view(), name="session-abort"),
    path(ONE + "summarize/", steer.SessionSummarizeView.as_view(), name="session-summarize"),
    path(ONE + "revert/", history.SessionRevertView.as_view(), name="session-revert"),
    path(ONE + "unrevert/", history.SessionUnrevertView.as_view(), name="session-unrevert"),
    path(ONE + "fork/", history.SessionForkView.as_view(), name="session-fork"),
    path(ONE + "diff/", history.SessionDiffView.as_view(), name="session-diff"),
    path(ONE + "todos/", steer.SessionTodosView.as_view(), name="session-todos"),
    path(ONE + "permissions/", steer.SessionPermissionListView.as_view(), name="session-permissions"),
    path(
        ONE + "permissions/<str:request_id>/reply/",
        steer.SessionPermissionReplyView.as_view(),
        name="session-permission-reply",
    ),
    path(ONE + "questions/", questions.SessionQuestionListView.as_view(), name="session-questions"),
    path(
        ONE + "questions/<str:request_id>/reply/",
        questions.SessionQuestionReplyView.as_view(),
        name="session-question-reply",
    ),
    path(
        ONE + "questions/<str:request_id>/reject/",
        questions.SessionQuestionRejectView.as_view(),
        name="session-question-reject",
    ),
    path(ONE + "workspace/", ws.WorkspaceView.as_view(), name="session-workspace"),
    path(ONE + "workspace/push/", ws.WorkspacePushView.as_view(), name="session-workspace-push"),
    path(ONE + "workspace/pull/", ws.WorkspacePullView.as_view(), name="session-workspace-pull"),
    path(
        ONE + "workspace/operations/<int:operation_id>/",
        ws.WorkspaceOperationView.as_view(),
        name="session-workspace-operation",
    ),
    path(ONE + "workspace/diff/", ws.WorkspaceDiffView.as_view(), name="session-workspace-diff"),
    path(ONE + "workspace/files/", ws.WorkspaceFilesView.as_view(), name="session-workspace-files"),
    path(ONE + "workspace/find/", ws.WorkspaceFindView.as_view(), name="session-workspace-find"),
    path(ONE + "workspace/file/", ws.WorkspaceFileView.as_view(), name="session-workspace-file"),
    path(ONE + "workspace/archive/", ws.WorkspaceArchiveView.as_view(), name="session-workspace-archive"),
    path(ONE + "workspace/upload/", ws.WorkspaceUploadView.as_view(), name="session-workspace-upload"),
    path(
        "orgs/<slug:org>/projects/<int:project_id>/agents/", steer.ProjectAgentsView.as_view(), name="agents"
    ),
]

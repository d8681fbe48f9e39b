"""Input and output shapes of the sessions, messages and events API. Outputs are OpenCode's JSON
(Session, `{info, parts}` messages) plus a few Hangar fields; they are documented for OpenAPI here."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from hangar.conversations.models import Session
from hangar.conversations.services import session_info

# --- inputs -------------------------------------------------------------------------------------


class ModelField(serializers.Field):
    """`"provider/model"` or OpenCode's `{"providerID", "modelID"}`; stored as the latter."""

    default_error_messages = {
        "invalid": 'Expected "provider/model" or {{"providerID": ..., "modelID": ...}}.'
    }

    def to_internal_value(self, data):
        provider: object
        model: object
        if isinstance(data, str):
            provider, _, model = data.partition("/")
        elif isinstance(data, dict):
            provider, model = data.get("providerID"), data.get("modelID")
        else:
            self.fail("invalid")
        if not (isinstance(provider, str) and isinstance(model, str) and provider and model):
            self.fail("invalid")
        return {"providerID": provider, "modelID": model}

    def to_representation(self, value):
        return value


class SessionCreateInput(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    agent = serializers.RegexField(r"^[A-Za-z0-9_.-]{1,64}$", required=False)
    model = extend_schema_field({"oneOf": [{"type": "string"}, {"type": "object"}]})(ModelField)(
        required=False
    )
    # A declared field named `parent`: DRF's metaclass moves declared fields off the class, so it never
    # shadows Field.parent at run time; the stubs see the class attribute.
    parent = serializers.CharField(  # type: ignore[assignment]
        max_length=40, required=False, help_text="parent session id (subagent)"
    )
    ref = serializers.CharField(
        max_length=250, required=False, help_text="branch, tag or commit to clone (default: the project's)"
    )
    branch = serializers.CharField(
        max_length=250, required=False, help_text="the session's own branch (default hangar/<short id>)"
    )


class SessionUpdateInput(serializers.Serializer):
    title = serializers.CharField(max_length=200)


class SessionListQuery(serializers.Serializer):
    archived = serializers.ChoiceField(choices=["false", "true", "all"], required=False, default="false")
    parent = serializers.CharField(  # type: ignore[assignment]  # as SessionCreateInput.parent
        max_length=40, required=False, help_text="only children of this session"
    )

    roots = serializers.BooleanField(
        required=False, default=False, help_text="only sessions without a parent"
    )
    search = serializers.CharField(max_length=200, required=False, default="", help_text="in the title")
    updated_since = serializers.DateTimeField(required=False)
    cursor = serializers.CharField(
        max_length=40, required=False, help_text="`next_cursor` of the previous page"
    )
    limit = serializers.IntegerField(min_value=1, max_value=200, required=False, default=50)


class EventsQuery(serializers.Serializer):
    after = serializers.IntegerField(min_value=0, max_value=2**63 - 1, required=False, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=1000, required=False, default=1000)


# The most messages one page of /messages/ holds (the default page): a long session is read in pages.
MESSAGES_PAGE_MAX = 200


class MessagesQuery(serializers.Serializer):
    limit = serializers.IntegerField(
        min_value=1, max_value=MESSAGES_PAGE_MAX, default=MESSAGES_PAGE_MAX, help_text="most recent N"
    )
    before = serializers.CharField(
        max_length=40,
        required=False,
        help_text="the X-Next-Cursor of the previous page: messages older than it",
    )


# --- outputs ------------------------------------------------------------------------------------


class SessionTimeOutput(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    archived = serializers.IntegerField(required=False)
    compacting = serializers.IntegerField(required=False)


class SessionOutput(serializers.Serializer):
    """OpenCode's Session plus `status`, `org` (slug) and `project` (id)."""

    id = serializers.CharField()
    slug = serializers.CharField()
    projectID = serializers.CharField()
    directory = serializers.CharField()
    title = serializers.CharField()
    version = serializers.CharField()
    time = SessionTimeOutput()
    parentID = serializers.CharField(required=False)
    agent = serializers.CharField(required=False)
    model = serializers.DictField(required=False)
    summary = serializers.DictField(required=False)
    share = serializers.DictField(required=False)
    revert = serializers.DictField(required=False)
    permission = serializers.ListField(child=serializers.DictField(), required=False)
    status = serializers.DictField(
        help_text='OpenCode SessionStatus: {"type": "idle"|"busy"|"retry"|"error", ...}'
    )
    org = serializers.CharField()
    project = serializers.IntegerField()

    def to_representation(self, session: Session) -> dict:
        info = session_info(session)
        info["status"] = {"type": session.status, **(session.status_detail or {})}
        info["org"] = session.org.slug
        info["project"] = session.project_id
        return info


class SessionNoticeOutput(serializers.Serializer):
    """What the platform told the session about itself: the `session.notice` event's payload."""

    kind = serializers.CharField(help_text='"sandbox_host_lost": its sandbox host was lost and it moved')
    host = serializers.CharField(required=False, help_text="the lost host")
    message = serializers.CharField(help_text="what happened, what it resumed from and what was lost")
    time = serializers.IntegerField(help_text="when it was told (ms since the epoch)")


class SessionDetailOutput(SessionOutput):
    """One session as the session view opens it: the Session plus its latest notice, which the live
    stream told only whoever was watching then (pass it as the `notice` context)."""

    notice = SessionNoticeOutput(allow_null=True, help_text="the latest notice, or null")

    def to_representation(self, session: Session) -> dict:
        info = super().to_representation(session)
        notice = self.context.get("notice")
        info["notice"] = SessionNoticeOutput(notice).data if notice else None
        return info


class SessionPageOutput(serializers.Serializer):
    items = SessionOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class MessageOutput(serializers.Serializer):
    info = serializers.DictField(help_text="OpenCode UserMessage | AssistantMessage")
    parts = serializers.ListField(child=serializers.DictField(), help_text="OpenCode Part[]")


class EventOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    type = serializers.CharField()
    payload = serializers.DictField()
    session = serializers.CharField()


class EventPageOutput(serializers.Serializer):
    events = EventOutput(many=True)
    last_seq = serializers.IntegerField(help_text="the session's latest sequence number")

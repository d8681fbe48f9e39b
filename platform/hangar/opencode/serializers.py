"""Input shapes of OpenCode's request bodies (opencode-1.18.33-openapi.json), as DRF serializers.
Unknown keys are rejected like OpenCode's `additionalProperties: false`."""

from rest_framework import serializers

from hangar.accounts.permission_rules import ACTIONS
from hangar.ids import MESSAGE_ID


class StrictSerializer(serializers.Serializer):
    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = set(data) - set(self.fields)
            if unknown:
                raise serializers.ValidationError({name: ["Unexpected field."] for name in sorted(unknown)})
        return super().to_internal_value(data)


class PermissionRuleIn(StrictSerializer):
    permission = serializers.CharField(max_length=64)
    pattern = serializers.CharField(max_length=500)
    action = serializers.ChoiceField(choices=ACTIONS)


class SessionModelIn(StrictSerializer):
    id = serializers.CharField(max_length=200)
    providerID = serializers.CharField(max_length=64)
    variant = serializers.CharField(required=False, max_length=64)


class SessionCreateIn(StrictSerializer):
    parentID = serializers.RegexField(r"^ses", required=False)
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)
    agent = serializers.CharField(required=False, max_length=64)
    model = SessionModelIn(required=False)
    metadata = serializers.DictField(required=False)
    permission = PermissionRuleIn(many=True, required=False)
    workspaceID = serializers.CharField(required=False, max_length=200)


class SessionTimeIn(StrictSerializer):
    # Milliseconds since 1970 (0 unarchives), up to the last moment a date can hold (9999-12-31).
    archived = serializers.FloatField(min_value=0, max_value=253_402_300_799_999)


class SessionUpdateIn(StrictSerializer):
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)
    metadata = serializers.DictField(required=False)
    permission = PermissionRuleIn(many=True, required=False)
    time = SessionTimeIn(required=False)


class PromptModelIn(StrictSerializer):
    providerID = serializers.CharField(max_length=64)
    modelID = serializers.CharField(max_length=200)


PART_FIELDS = {
    "text": ({"type", "text"}, {"id", "synthetic", "ignored", "time", "metadata"}),
    "file": ({"type", "mime", "url"}, {"id", "filename", "source"}),
    "agent": ({"type", "name"}, {"id", "source"}),
    "subtask": ({"type", "prompt", "description", "agent"}, {"id", "model", "command"}),
}


class PartInField(serializers.DictField):
    """TextPartInput | FilePartInput | AgentPartInput | SubtaskPartInput."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        kind = data.get("type")
        if kind not in PART_FIELDS:
            raise serializers.ValidationError(f"Unknown part type: {kind!r}.")
        required, optional = PART_FIELDS[kind]
        missing = sorted(required - set(data))
        extra = sorted(set(data) - required - optional)
        if missing or extra:
            raise serializers.ValidationError(f"{kind} part: missing {missing}, unexpected {extra}.")
        if "id" in data and not str(data["id"]).startswith("prt"):
            raise serializers.ValidationError("A part id starts with 'prt'.")
        return data


class PromptIn(StrictSerializer):
    messageID = serializers.RegexField(MESSAGE_ID.pattern, required=False)
    model = PromptModelIn(required=False)
    agent = serializers.CharField(required=False, max_length=64)
    noReply = serializers.BooleanField(required=False)
    tools = serializers.DictField(child=serializers.BooleanField(), required=False)
    format = serializers.DictField(required=False)
    system = serializers.CharField(required=False, allow_blank=True)
    variant = serializers.CharField(required=False)
    parts = serializers.ListField(child=PartInField())


class FilePartInField(PartInField):
    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        if data.get("type") != "file":
            raise serializers.ValidationError("A command's parts are files.")
        return data


class CommandIn(StrictSerializer):
    """OpenCode's body for POST /session/{id}/command: `model` is "provider/model" here."""

    messageID = serializers.RegexField(MESSAGE_ID.pattern, required=False)
    agent = serializers.CharField(required=False, max_length=64)
    model = serializers.RegexField(r"^[^/\s]{1,64}/\S{1,200}$", required=False)
    arguments = serializers.CharField(
        required=False, allow_blank=True, max_length=100_000, trim_whitespace=False
    )
    command = serializers.CharField(max_length=300)
    variant = serializers.CharField(required=False)
    parts = serializers.ListField(child=FilePartInField(), required=False, max_length=20)


class PermissionReplyIn(StrictSerializer):
    reply = serializers.ChoiceField(choices=["once", "always", "reject"])
    message = serializers.CharField(required=False, allow_blank=True, max_length=10_000)


class QuestionReplyIn(StrictSerializer):
    answers = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(max_length=10_000), max_length=50),
        max_length=10,
    )


class LegacyPermissionIn(StrictSerializer):
    response = serializers.ChoiceField(choices=["once", "always", "reject"])


class SummarizeIn(StrictSerializer):
    providerID = serializers.CharField(max_length=64)
    modelID = serializers.CharField(max_length=200)
    auto = serializers.BooleanField(required=False, default=False)


class RevertIn(StrictSerializer):
    messageID = serializers.RegexField(MESSAGE_ID.pattern, max_length=40)
    partID = serializers.RegexField(r"^prt_[0-9A-Za-z]{1,36}$", required=False, max_length=40)


class ForkIn(StrictSerializer):
    messageID = serializers.RegexField(MESSAGE_ID.pattern, required=False, max_length=40)


class DiffQuery(serializers.Serializer):
    messageID = serializers.RegexField(MESSAGE_ID.pattern, required=False, max_length=40)

"""Projects of an org: any member reads; admins create, update and delete."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.accounts.permission_rules import ACTIONS
from hangar.api.scoping import scope_for
from hangar.projects.models import NetworkPolicy
from hangar.projects.selectors import project_get, project_list
from hangar.projects.services import project_create, project_delete, project_update
from sandbox import gitssh


class PermissionRuleSerializer(serializers.Serializer):
    permission = serializers.CharField()
    pattern = serializers.CharField()
    action = serializers.ChoiceField(choices=ACTIONS)


class ProjectOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()
    default_agent = serializers.CharField()
    default_model = serializers.CharField()
    setup_script = serializers.CharField()
    permission_rules = PermissionRuleSerializer(many=True)
    headless_policy = serializers.DictField(
        child=serializers.DictField(),
        help_text="what an ask becomes by trigger (web, api, slack, webhook, codehost, schedule): "
        "{mode: ask|reject|route|allow_listed, approvers?, expire_after_s?, rules?, reason?}",
    )
    sandbox_image = serializers.CharField()
    sandbox_cpus = serializers.FloatField()
    sandbox_memory_mb = serializers.IntegerField()
    sandbox_pids = serializers.IntegerField()
    sandbox_disk_mb = serializers.IntegerField()
    command_timeout_s = serializers.IntegerField()
    network_policy = serializers.CharField()
    network_allowlist = serializers.ListField(child=serializers.CharField())
    setup_network_allowlist = serializers.ListField(
        child=serializers.CharField(), help_text="hosts open only while the setup script runs"
    )
    model_limits = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text='per-model token limits: {"provider/model": {"context": N, "output": N, "input": N}}',
    )
    agents = serializers.DictField(
        child=serializers.DictField(),
        help_text="the project's own agents: {name: {description, mode, prompt, ...}}",
    )
    mcp = serializers.DictField(
        child=serializers.DictField(),
        help_text="MCP servers its sessions get, in OpenCode's shape: {name: {type: local, command, environment}"
        " | {type: remote, url, headers}}; a header value may name a project secret as {env:NAME}",
    )
    repo_url = serializers.CharField()
    repo_default_branch = serializers.CharField()
    protected_branches = serializers.ListField(
        child=serializers.CharField(), help_text="branch patterns only admins push to, besides the default"
    )
    repo_username = serializers.CharField()
    repo_token_hint = serializers.CharField(
        help_text="what may be seen of the token; the token is write-only"
    )
    repo_ssh_public_key = serializers.CharField(
        help_text="the deploy key's public half, to add to the repository; the private key is write-only"
    )
    repo_ssh_host_key = serializers.CharField(help_text="the SSH host's pinned public key")
    repo_ssh_host_key_fingerprint = serializers.SerializerMethodField()
    opencode_url = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_repo_ssh_host_key_fingerprint(self, project) -> str:
        return gitssh.fingerprint(project.repo_ssh_host_key) if project.repo_ssh_host_key else ""

    def get_opencode_url(self, project) -> str:
        return f"{settings.PUBLIC_URL}/oc/{project.pk}"


class ProjectIn(serializers.Serializer):
    """Types only: the semantic checks (rule actions, bounds, allowlist syntax) live in the services and
    name the offending element, e.g. `permission_rules[2].action`."""

    name = serializers.CharField(max_length=150)
    slug = serializers.SlugField(max_length=80, required=False)
    default_agent = serializers.CharField(max_length=64, required=False)
    default_model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    setup_script = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    permission_rules = serializers.JSONField(required=False)
    headless_policy = serializers.JSONField(required=False)
    sandbox_image = serializers.CharField(max_length=200, required=False, allow_blank=True)
    # Wide bounds only: the service says what the real limits are (hangar.projects.services).
    sandbox_cpus = serializers.FloatField(required=False, min_value=0, max_value=1024)
    sandbox_memory_mb = serializers.IntegerField(required=False, min_value=0, max_value=2**31)
    sandbox_pids = serializers.IntegerField(required=False, min_value=0, max_value=2**31)
    sandbox_disk_mb = serializers.IntegerField(required=False, min_value=0, max_value=2**31)
    command_timeout_s = serializers.IntegerField(required=False, min_value=0, max_value=2**31)
    network_policy = serializers.ChoiceField(choices=NetworkPolicy.choices, required=False)
    network_allowlist = serializers.ListField(child=serializers.CharField(), required=False)
    setup_network_allowlist = serializers.ListField(child=serializers.CharField(), required=False)
    model_limits = serializers.JSONField(required=False)
    agents = serializers.JSONField(required=False)
    mcp = serializers.JSONField(required=False)
    repo_url = serializers.CharField(max_length=500, required=False, allow_blank=True)
    repo_default_branch = serializers.CharField(max_length=250, required=False, allow_blank=True)
    protected_branches = serializers.JSONField(required=False)
    repo_username = serializers.CharField(max_length=100, required=False, allow_blank=True)
    repo_token = serializers.CharField(
        required=False, allow_blank=True, write_only=True, trim_whitespace=False, help_text='"" clears it'
    )
    repo_ssh_key = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        trim_whitespace=False,
        help_text='an SSH private key without passphrase, "generate" for a new one, "" clears it',
    )
    repo_ssh_host_key = serializers.CharField(
        max_length=2000,
        required=False,
        allow_blank=True,
        help_text='the host\'s public key; absent: read from the host when the URL names a new host; "" reads it again',
    )


class ProjectListCreateView(APIView):
    @extend_schema(operation_id="projects_list", responses=ProjectOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response(ProjectOut(project_list(org=scope.org), many=True).data)

    @extend_schema(operation_id="projects_create", request=ProjectIn, responses={201: ProjectOut})
    def post(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = ProjectIn(data=request.data)
        body.is_valid(raise_exception=True)
        project = project_create(actor=scope.actor, org=scope.org, **body.validated_data)
        return Response(ProjectOut(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailView(APIView):
    @extend_schema(operation_id="projects_get", responses=ProjectOut)
    def get(self, request, org, project_id):
        scope = scope_for(request, org)
        return Response(ProjectOut(project_get(org=scope.org, project_id=project_id)).data)

    @extend_schema(operation_id="projects_update", request=ProjectIn(partial=True), responses=ProjectOut)
    def patch(self, request, org, project_id):
        scope = scope_for(request, org, Role.ADMIN)
        project = project_get(org=scope.org, project_id=project_id)
        body = ProjectIn(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        project = project_update(actor=scope.actor, project=project, **body.validated_data)
        return Response(ProjectOut(project).data)

    @extend_schema(operation_id="projects_delete", responses={204: None})
    def delete(self, request, org, project_id):
        scope = scope_for(request, org, Role.ADMIN)
        project_delete(actor=scope.actor, project=project_get(org=scope.org, project_id=project_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
